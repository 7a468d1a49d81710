package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/relock-go/relock/fence"
)

// ledger is one row of a table, written only under fence.SQL's check.
type ledger struct {
	db  *sql.DB
	g   *fence.SQL
	out io.Writer
	pg  bool
	dir string // SQLite's, removed by Close
}

// openLedger opens PostgreSQL at DATABASE_URL, or else a new SQLite file
// in a temporary directory, and creates the tables (fence's and ours).
func openLedger(ctx context.Context, out io.Writer) (*ledger, error) {
	l := &ledger{out: out}
	driver, dsn, dialect := "sqlite", "", fence.SQLite
	if url := os.Getenv("DATABASE_URL"); url != "" {
		driver, dsn, dialect, l.pg = "pgx", url, fence.PostgreSQL, true
		fmt.Fprint(out, "Using PostgreSQL at DATABASE_URL.\n\n")
	} else {
		dir, err := os.MkdirTemp("", "fencing-example-")
		if err != nil {
			return nil, err
		}
		l.dir = dir
		dsn = "file:" + filepath.Join(dir, "ledger.db") + "?_pragma=journal_mode(WAL)&_pragma=busy_timeout(5000)"
		fmt.Fprint(out, "Using an embedded SQLite (set DATABASE_URL to use PostgreSQL).\n\n")
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		os.RemoveAll(l.dir)
		return nil, err
	}
	l.db = db
	if l.g, err = fence.NewSQL(dialect, ""); err == nil {
		err = l.g.CreateTable(ctx, db)
	}
	if err == nil {
		_, err = db.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS example_ledger (id TEXT PRIMARY KEY, entry TEXT NOT NULL)")
	}
	if err != nil {
		l.Close()
		return nil, err
	}
	return l, nil
}

// Close closes the database and removes an embedded one.
func (l *ledger) Close() {
	l.db.Close()
	if l.dir != "" {
		os.RemoveAll(l.dir)
	}
}

// Write sets the ledger's entry in a transaction that begins with the
// fencing check: a stale token rolls it back.
func (l *ledger) Write(ctx context.Context, token int64, entry string) error {
	tx, err := l.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback() // a no-op after Commit
	if err := l.g.Check(ctx, tx, name, token); err != nil {
		fmt.Fprintf(l.out, "database: REJECTED %q: %v\n", entry, err)
		return err
	}
	upsert := "INSERT INTO example_ledger (id, entry) VALUES (?, ?) ON CONFLICT (id) DO UPDATE SET entry = excluded.entry"
	if l.pg {
		upsert = "INSERT INTO example_ledger (id, entry) VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET entry = excluded.entry"
	}
	if _, err := tx.ExecContext(ctx, upsert, name, entry); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	fmt.Fprintf(l.out, "database: accepted %q with token %d\n", entry, token)
	return nil
}

// Value reads the ledger's entry.
func (l *ledger) Value(ctx context.Context) (string, error) {
	q := "SELECT entry FROM example_ledger WHERE id = ?"
	if l.pg {
		q = "SELECT entry FROM example_ledger WHERE id = $1"
	}
	var v string
	err := l.db.QueryRowContext(ctx, q, name).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return v, err
}
