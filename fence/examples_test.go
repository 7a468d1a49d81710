package fence_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/fence"
)

// exampleRedis is an embedded Redis for the examples, closed by done.
func exampleRedis() (rdb *redis.Client, done func()) {
	mr, _ := miniredis.Run()
	rdb = redis.NewClient(&redis.Options{Addr: mr.Addr()})
	return rdb, func() { rdb.Close(); mr.Close() }
}

var ctx = context.Background()

// The transaction's first statement is the check; a stale token rolls
// the whole transaction back. (db comes from your driver: pgx's stdlib,
// modernc.org/sqlite, ...)
func ExampleSQL_Check() {
	guard, _ := fence.NewSQL(fence.PostgreSQL, "")
	var db *sql.DB  // sql.Open("pgx", dsn)
	var token int64 // lock.FencingToken(held)
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return
	}
	defer tx.Rollback()
	if err := guard.Check(ctx, tx, "invoice:42", token); err != nil {
		return // errors.Is(err, fence.ErrStale): a newer holder has written
	}
	_, _ = tx.ExecContext(ctx, "UPDATE invoices SET paid = true WHERE id = 42")
	_ = tx.Commit()
}

func ExampleNewSQL() {
	guard, err := fence.NewSQL(fence.SQLite, "fences")
	fmt.Println(guard != nil, err)
	_, err = fence.NewSQL(fence.SQLite, "fences; DROP TABLE x")
	fmt.Println(err)
	// Output:
	// true <nil>
	// relock: new fence "fences; DROP TABLE x": invalid argument: table name "fences; DROP TABLE x" is not a plain identifier
}

func ExampleSQL_Migration() {
	guard, _ := fence.NewSQL(fence.PostgreSQL, "")
	fmt.Println(guard.Migration())
	// Output:
	// CREATE TABLE IF NOT EXISTS relock_fence (
	// 	resource TEXT PRIMARY KEY,
	// 	token BIGINT NOT NULL
	// )
}

func ExampleSQL_CreateTable() {
	guard, _ := fence.NewSQL(fence.SQLite, "")
	var db *sql.DB // sql.Open("sqlite", "file:app.db?_pragma=journal_mode(WAL)")
	if err := guard.CreateTable(ctx, db); err != nil {
		return
	}
}

func ExampleSQL_Highest() {
	guard, _ := fence.NewSQL(fence.PostgreSQL, "")
	var db *sql.DB
	highest, err := guard.Highest(ctx, db, "invoice:42") // 0: none yet
	fmt.Println(highest, err)
}

// A SQL guard in front of an HTTP service: each request's token is
// checked in a transaction of its own.
func ExampleSQL_Admitter() {
	guard, _ := fence.NewSQL(fence.PostgreSQL, "")
	var db *sql.DB
	var handler http.Handler
	http.Handle("/invoices/", fence.Middleware(guard.Admitter(db), func(r *http.Request) string { return r.URL.Path })(handler))
}

func ExampleNewRedis() {
	rdb, done := exampleRedis()
	defer done()
	guard := fence.NewRedis(rdb, fence.WithRetention(24*time.Hour))
	fmt.Println(guard.Set(ctx, "config", 7, "v1", 0))
	// Output: <nil>
}

func ExampleWithRetention() {
	rdb, done := exampleRedis()
	defer done()
	guard := fence.NewRedis(rdb, fence.WithRetention(0)) // the record goes with the key
	_ = guard.Set(ctx, "session", 3, "x", time.Minute)
	_ = guard.Del(ctx, "session", 3)
	fmt.Println(rdb.Exists(ctx, fence.RecordKey("session")).Val())
	// Output: 0
}

func ExampleRedis_Set() {
	rdb, done := exampleRedis()
	defer done()
	guard := fence.NewRedis(rdb)
	_ = guard.Set(ctx, "leader:config", 9, "new", time.Hour)
	err := guard.Set(ctx, "leader:config", 8, "old", time.Hour)
	fmt.Println(err)
	fmt.Println(rdb.Get(ctx, "leader:config").Val())
	// Output:
	// relock: set fence "leader:config": stale fencing token 8: the resource has seen 9
	// new
}

func ExampleRedis_HSet() {
	rdb, done := exampleRedis()
	defer done()
	guard := fence.NewRedis(rdb)
	fmt.Println(guard.HSet(ctx, "order:1", 4, "status", "paid", "by", "worker-2"))
	fmt.Println(rdb.HGet(ctx, "order:1", "status").Val())
	// Output:
	// <nil>
	// paid
}

func ExampleRedis_Del() {
	rdb, done := exampleRedis()
	defer done()
	guard := fence.NewRedis(rdb)
	_ = guard.Set(ctx, "job:1", 5, "running", 0)
	_ = guard.Del(ctx, "job:1", 6)
	err := guard.Set(ctx, "job:1", 5, "running again", 0) // a stale holder cannot bring it back
	fmt.Println(errors.Is(err, fence.ErrStale), rdb.Exists(ctx, "job:1").Val())
	// Output: true 0
}

func ExampleRedis_Expire() {
	rdb, done := exampleRedis()
	defer done()
	guard := fence.NewRedis(rdb)
	_ = guard.Set(ctx, "cache:1", 5, "v", 0)
	fmt.Println(guard.Expire(ctx, "cache:1", 5, time.Minute), rdb.TTL(ctx, "cache:1").Val())
	// Output: <nil> 1m0s
}

// Admit records a token for a resource that is not a key: Middleware's
// guard.
func ExampleRedis_Admit() {
	rdb, done := exampleRedis()
	defer done()
	guard := fence.NewRedis(rdb)
	fmt.Println(guard.Admit(ctx, "printer", 12))
	fmt.Println(errors.Is(guard.Admit(ctx, "printer", 11), fence.ErrStale))
	// Output:
	// <nil>
	// true
}

func ExampleRedis_Highest() {
	rdb, done := exampleRedis()
	defer done()
	guard := fence.NewRedis(rdb)
	_ = guard.Set(ctx, "k", 42, "v", 0)
	fmt.Println(guard.Highest(ctx, "k"))
	// Output: 42 <nil>
}

// A user's Lua runs under the check, in the same script.
func ExampleRedis_Script() {
	rdb, done := exampleRedis()
	defer done()
	guard := fence.NewRedis(rdb)
	move := guard.Script(`
		redis.call('DECRBY', KEYS[1], ARGV[1])
		return redis.call('INCRBY', KEYS[2], ARGV[1])`)
	rdb.Set(ctx, "{acct}:a", 100, 0)
	got, err := move.Run(ctx, "{acct}:a", 3, []string{"{acct}:a", "{acct}:b"}, 30)
	fmt.Println(got, err)
	_, err = move.Run(ctx, "{acct}:a", 2, []string{"{acct}:a", "{acct}:b"}, 30)
	fmt.Println(errors.Is(err, fence.ErrStale), rdb.Get(ctx, "{acct}:a").Val())
	// Output:
	// 30 <nil>
	// true 70
}

func ExampleScript_Run() {
	rdb, done := exampleRedis()
	defer done()
	push := fence.NewRedis(rdb).Script(`return redis.call('RPUSH', KEYS[1], ARGV[1])`)
	fmt.Println(push.Run(ctx, "events", 1, []string{"events"}, "started"))
	// Output: 1 <nil>
}

func ExampleRecordKey() {
	fmt.Println(fence.RecordKey("invoice:42"))
	fmt.Println(fence.RecordKey("{tenant1}:invoice:42"))
	// Output:
	// {invoice:42}:fence
	// {tenant1}:invoice:42:fence
}

func ExampleStaleError_Error() {
	err := &fence.StaleError{Token: 5, Highest: 9}
	fmt.Println(err)
	// Output: stale fencing token 5: the resource has seen 9
}

func ExampleStaleError_Unwrap() {
	rdb, done := exampleRedis()
	defer done()
	guard := fence.NewRedis(rdb)
	_ = guard.Admit(ctx, "r", 9)
	var se *fence.StaleError
	err := guard.Admit(ctx, "r", 5)
	fmt.Println(errors.Is(err, fence.ErrStale), errors.As(err, &se), se.Token, se.Highest)
	// Output: true true 5 9
}

func ExampleSetToken() {
	req, _ := http.NewRequest(http.MethodPut, "http://store.internal/docs/1", nil)
	fence.SetToken(req, 1795929396344849) // lock.FencingToken(held)
	fmt.Println(req.Header.Get(fence.Header))
	// Output: 1795929396344849
}

func ExampleRequestToken() {
	req := httptest.NewRequest(http.MethodPut, "/docs/1", nil)
	_, err := fence.RequestToken(req)
	fmt.Println(err)
	req.Header.Set("Fencing-Token", "17")
	fmt.Println(fence.RequestToken(req))
	// Output:
	// no fencing token
	// 17 <nil>
}

func ExampleMiddleware() {
	rdb, done := exampleRedis()
	defer done()
	h := fence.Middleware(fence.NewRedis(rdb), func(r *http.Request) string { return r.URL.Path })(
		http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	for _, token := range []int64{8, 5} {
		req := httptest.NewRequest(http.MethodPut, "/docs/1", nil)
		fence.SetToken(req, token)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		fmt.Println(strings.TrimSpace(fmt.Sprint(rec.Code, " ", rec.Body.String())))
	}
	// Output:
	// 204
	// 409 {"error":"stale fencing token","highest":8,"resource":"/docs/1","token":5}
}

// The handler writes through a guard too, with the admitted token.
func ExampleTokenFrom() {
	rdb, done := exampleRedis()
	defer done()
	guard := fence.NewRedis(rdb)
	save := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, _ := fence.TokenFrom(r.Context())
		if err := guard.Set(r.Context(), "doc:1", token, "body", 0); err != nil {
			fence.WriteError(w, err)
			return
		}
		fmt.Println("saved with token", token)
	})
	req := httptest.NewRequest(http.MethodPut, "/docs/1", nil)
	fence.SetToken(req, 3)
	fence.Middleware(guard, func(*http.Request) string { return "doc:1" })(save).ServeHTTP(httptest.NewRecorder(), req)
	// Output: saved with token 3
}

func ExampleWriteError() {
	rec := httptest.NewRecorder()
	rdb, done := exampleRedis()
	defer done()
	guard := fence.NewRedis(rdb)
	_ = guard.Admit(ctx, "r", 2)
	fence.WriteError(rec, guard.Admit(ctx, "r", 1))
	var body map[string]any
	_ = json.Unmarshal(rec.Body.Bytes(), &body)
	fmt.Println(rec.Code, body["token"], body["highest"])
	// Output: 409 1 2
}
