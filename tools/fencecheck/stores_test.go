package fencecheck

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	_ "modernc.org/sqlite"

	"github.com/relock-go/relock/fence"
)

// store is a resource behind one guard. write makes one fenced write of
// value for resource with token and appends "token value" to the
// resource's log in the same transaction or script; log returns the
// accepted writes in the store's own order.
type store interface {
	write(ctx context.Context, resource string, token int64, value string) error
	value(ctx context.Context, resource string) (string, error)
	log(ctx context.Context, resource string) ([]string, error)
}

// sqlStore is a table of values and a log, guarded by fence.SQL.
type sqlStore struct {
	db *sql.DB
	g  *fence.SQL
	pg bool
}

const sqliteDSN = "file:%s?_pragma=journal_mode(WAL)&_pragma=busy_timeout(20000)&_pragma=synchronous(NORMAL)"

func openSQL(t testing.TB, dialect fence.Dialect, dsn string) *sqlStore {
	t.Helper()
	s, err := dialSQL(dialect, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.db.Close() })
	return s
}

// dialSQL opens dsn and creates the tables.
func dialSQL(dialect fence.Dialect, dsn string) (*sqlStore, error) {
	driver := "sqlite"
	if dialect == fence.PostgreSQL {
		driver = "pgx"
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		return nil, err
	}
	g, err := fence.NewSQL(dialect, "")
	if err != nil {
		return nil, err
	}
	s := &sqlStore{db: db, g: g, pg: dialect == fence.PostgreSQL}
	if err := s.migrate(context.Background()); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// newSQLite is a SQLite database in a new file of the test's.
func newSQLite(t testing.TB) (*sqlStore, string) {
	dsn := fmt.Sprintf(sqliteDSN, filepath.Join(t.TempDir(), "fence.db"))
	return openSQL(t, fence.SQLite, dsn), dsn
}

// newPostgres is a new database of the shared PostgreSQL server.
func newPostgres(t testing.TB) (*sqlStore, string) {
	base := postgresDSN(t)
	name := fmt.Sprintf("t%d", time.Now().UnixNano())
	admin, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if _, err := admin.Exec("CREATE DATABASE " + name); err != nil {
		t.Fatal(err)
	}
	dsn := strings.Replace(base, "/postgres?", "/"+name+"?", 1)
	return openSQL(t, fence.PostgreSQL, dsn), dsn
}

func (s *sqlStore) migrate(ctx context.Context) error {
	id := "id INTEGER PRIMARY KEY AUTOINCREMENT"
	if s.pg {
		id = "id BIGSERIAL PRIMARY KEY"
	}
	return errors.Join(s.g.CreateTable(ctx, s.db),
		s.exec(ctx, s.db, "CREATE TABLE IF NOT EXISTS fc_data (resource TEXT PRIMARY KEY, value TEXT NOT NULL)"),
		s.exec(ctx, s.db, "CREATE TABLE IF NOT EXISTS fc_log ("+id+", resource TEXT NOT NULL, entry TEXT NOT NULL)"))
}

// q rewrites ? placeholders as $n for PostgreSQL.
func (s *sqlStore) q(query string) string {
	if !s.pg {
		return query
	}
	var b strings.Builder
	n := 0
	for _, r := range query {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func (s *sqlStore) exec(ctx context.Context, q fence.Querier, query string, args ...any) error {
	_, err := q.ExecContext(ctx, s.q(query), args...)
	return err
}

func (s *sqlStore) write(ctx context.Context, resource string, token int64, value string) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	return s.finish(ctx, tx, resource, token, value)
}

// begin starts a transaction that reads resource's value, as a holder
// does before it decides what to write; finish writes and commits it.
func (s *sqlStore) begin(ctx context.Context, resource string) (*sql.Tx, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	var v string
	err = tx.QueryRowContext(ctx, s.q("SELECT value FROM fc_data WHERE resource = ?"), resource).Scan(&v)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		_ = tx.Rollback()
		return nil, err
	}
	return tx, nil
}

// finish is the guarded write: the check first, then the writes, commit.
func (s *sqlStore) finish(ctx context.Context, tx *sql.Tx, resource string, token int64, value string) error {
	err := s.g.Check(ctx, tx, resource, token)
	if err == nil {
		err = s.exec(ctx, tx, `INSERT INTO fc_data (resource, value) VALUES (?, ?)
ON CONFLICT (resource) DO UPDATE SET value = excluded.value`, resource, value)
	}
	if err == nil {
		err = s.exec(ctx, tx, "INSERT INTO fc_log (resource, entry) VALUES (?, ?)", resource, fmt.Sprintf("%d %s", token, value))
	}
	if err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}

func (s *sqlStore) value(ctx context.Context, resource string) (string, error) {
	var v string
	err := s.db.QueryRowContext(ctx, s.q("SELECT value FROM fc_data WHERE resource = ?"), resource).Scan(&v)
	return v, err
}

func (s *sqlStore) log(ctx context.Context, resource string) ([]string, error) {
	rows, err := s.db.QueryContext(ctx, s.q("SELECT entry FROM fc_log WHERE resource = ? ORDER BY id"), resource)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var e string
		if err := rows.Scan(&e); err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// redisStore keeps a resource's value at the key resource and its log
// at "{resource}:log", written by one fenced script.
type redisStore struct {
	rdb    redis.UniversalClient
	g      *fence.Redis
	logged *fence.Script
}

func newRedisStore(rdb redis.UniversalClient) *redisStore {
	g := fence.NewRedis(rdb)
	return &redisStore{rdb: rdb, g: g, logged: g.Script(
		`redis.call('SET', KEYS[1], ARGV[1]) return redis.call('RPUSH', KEYS[2], ARGV[2])`)}
}

func (s *redisStore) write(ctx context.Context, resource string, token int64, value string) error {
	_, err := s.logged.Run(ctx, resource, token, []string{resource, "{" + resource + "}:log"}, value, fmt.Sprintf("%d %s", token, value))
	return err
}

func (s *redisStore) value(ctx context.Context, resource string) (string, error) {
	return s.rdb.Get(ctx, resource).Result()
}

func (s *redisStore) log(ctx context.Context, resource string) ([]string, error) {
	return s.rdb.LRange(ctx, "{"+resource+"}:log", 0, -1).Result()
}

// httpStore is a small service behind fence.Middleware, backed by a
// Redis guard; its handler keeps values and logs in memory.
type httpStore struct {
	srv    *httptest.Server
	client *http.Client
	mu     sync.Mutex
	values map[string]string
	logs   map[string][]string
}

func newHTTPStore(t testing.TB, guard fence.Guard) *httpStore {
	s := &httpStore{values: map[string]string{}, logs: map[string][]string{}}
	mw := fence.Middleware(guard, func(r *http.Request) string { return strings.TrimPrefix(r.URL.Path, "/") })
	s.srv = httptest.NewServer(mw(http.HandlerFunc(s.serve)))
	s.client = &http.Client{Timeout: 30 * time.Second}
	t.Cleanup(func() { s.client.CloseIdleConnections(); s.srv.Close() })
	return s
}

func (s *httpStore) serve(w http.ResponseWriter, r *http.Request) {
	token, _ := fence.TokenFrom(r.Context())
	body, _ := io.ReadAll(r.Body)
	res := strings.TrimPrefix(r.URL.Path, "/")
	s.mu.Lock()
	s.values[res] = string(body)
	s.logs[res] = append(s.logs[res], fmt.Sprintf("%d %s", token, body))
	s.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func (s *httpStore) write(ctx context.Context, resource string, token int64, value string) error {
	return postWrite(ctx, s.client, s.srv.URL+"/"+resource, token, value)
}

// postWrite sends a fenced write; a 409 becomes an error matching
// fence.ErrStale, with the body's token and highest.
func postWrite(ctx context.Context, c *http.Client, url string, token int64, value string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader([]byte(value)))
	if err != nil {
		return err
	}
	fence.SetToken(req, token)
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	switch resp.StatusCode {
	case http.StatusNoContent:
		return nil
	case http.StatusConflict:
		return fmt.Errorf("%w: HTTP 409 %s", fence.ErrStale, bytes.TrimSpace(body))
	}
	return fmt.Errorf("HTTP %d %s", resp.StatusCode, body)
}

func (s *httpStore) value(_ context.Context, resource string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.values[resource], nil
}

func (s *httpStore) log(_ context.Context, resource string) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.logs[resource]...), nil
}
