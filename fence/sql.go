package fence

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"

	"github.com/relock-go/relock"
)

// Dialect is the SQL a database speaks: placeholders and upsert differ.
type Dialect int

const (
	// PostgreSQL, 9.5 or later (INSERT ... ON CONFLICT ... RETURNING).
	PostgreSQL Dialect = iota + 1
	// SQLite, 3.35 or later (upsert with RETURNING).
	SQLite
)

// DefaultTable is the table NewSQL uses when it is given "".
const DefaultTable = "relock_fence"

// Querier is what Check runs its statement on: a *sql.Tx (the caller's
// transaction), or a *sql.Conn or *sql.DB where the caller knows why.
type Querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// SQL is the guard of a SQL database: a table of its own holds each
// resource's highest token, which Check raises in the caller's
// transaction or refuses.
//
// Call Check first in the transaction: it locks the resource's row until
// the transaction ends, so writers of one resource commit one at a time,
// in token order, and one that began before a newer holder but commits
// after it is refused. Isolation:
//
//   - PostgreSQL: READ COMMITTED (the default) suffices. Under REPEATABLE
//     READ or SERIALIZABLE the same race fails with SQLSTATE 40001
//     instead; the retried transaction gets ErrStale.
//   - SQLite: use WAL mode, a busy_timeout and deferred transactions (the
//     default). A transaction that read before a newer writer committed
//     fails its Check with SQLITE_BUSY instead of ErrStale, and rolls back
//     all the same; in rollback-journal mode a stalled reader holds back
//     the newer commit until its busy_timeout.
//
// MySQL is not a dialect: its upsert cannot tell, in one statement, a
// holder's repeated write from a refused one.
type SQL struct {
	dialect      Dialect
	table        string
	upsert, read string
}

var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,62}$`)

// NewSQL returns the guard for d with the record table named table
// (DefaultTable when ""), a plain identifier as it is written into SQL.
func NewSQL(d Dialect, table string) (*SQL, error) {
	if table == "" {
		table = DefaultTable
	}
	if !identifier.MatchString(table) {
		return nil, wrap("new", table, fmt.Errorf("%w: table name %q is not a plain identifier", relock.ErrInvalidArgument, table))
	}
	g := &SQL{dialect: d, table: table}
	p1, p2 := "?", "?"
	switch d {
	case PostgreSQL:
		p1, p2 = "$1", "$2"
	case SQLite:
	default:
		return nil, wrap("new", table, fmt.Errorf("%w: unknown dialect %d", relock.ErrInvalidArgument, d))
	}
	// The row of a refused writer is left as it was, so RETURNING gives no row.
	g.upsert = fmt.Sprintf(`INSERT INTO %[1]s (resource, token) VALUES (%[2]s, %[3]s)
ON CONFLICT (resource) DO UPDATE SET token = excluded.token WHERE %[1]s.token <= excluded.token
RETURNING token`, table, p1, p2)
	g.read = fmt.Sprintf(`SELECT token FROM %s WHERE resource = %s`, table, p1)
	return g, nil
}

// Migration returns the record table's CREATE TABLE IF NOT EXISTS, for a migration tool.
func (g *SQL) Migration() string {
	typ := "BIGINT"
	if g.dialect == SQLite {
		typ = "INTEGER"
	}
	return fmt.Sprintf("CREATE TABLE IF NOT EXISTS %s (\n\tresource TEXT PRIMARY KEY,\n\ttoken %s NOT NULL\n)", g.table, typ)
}

// CreateTable runs Migration on db.
func (g *SQL) CreateTable(ctx context.Context, db Querier) error {
	_, err := db.ExecContext(ctx, g.Migration())
	return wrap("create table", g.table, err)
}

// Check records token as resource's highest in tx, in one statement, or
// returns an error matching ErrStale (a *StaleError in a *relock.Error)
// when the resource has accepted a larger one: the caller rolls back.
func (g *SQL) Check(ctx context.Context, tx Querier, resource string, token int64) error {
	if err := checkArgs("check", resource, token); err != nil {
		return err
	}
	var got int64
	err := tx.QueryRowContext(ctx, g.upsert, resource, token).Scan(&got)
	if !errors.Is(err, sql.ErrNoRows) {
		return wrap("check", resource, err)
	}
	highest, err := g.Highest(ctx, tx, resource)
	if err != nil {
		return err
	}
	return stale("check", resource, token, highest)
}

// Highest returns the highest token resource has accepted, 0 if none.
func (g *SQL) Highest(ctx context.Context, q Querier, resource string) (int64, error) {
	var highest int64
	err := q.QueryRowContext(ctx, g.read, resource).Scan(&highest)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	return highest, wrap("read", resource, err)
}

// Admitter returns a Guard for Middleware that runs Check in its own transaction on db.
func (g *SQL) Admitter(db *sql.DB) Guard { return sqlAdmitter{g, db} }

type sqlAdmitter struct {
	g  *SQL
	db *sql.DB
}

func (a sqlAdmitter) Admit(ctx context.Context, resource string, token int64) error {
	tx, err := a.db.BeginTx(ctx, nil)
	if err != nil {
		return wrap("admit", resource, err)
	}
	if err := a.g.Check(ctx, tx, resource, token); err != nil {
		if rb := tx.Rollback(); rb != nil && !errors.Is(rb, sql.ErrTxDone) {
			return errors.Join(err, rb)
		}
		return err
	}
	return wrap("admit", resource, tx.Commit())
}
