package fencecheck

import (
	"context"
	"database/sql"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/fence"
	"github.com/relock-go/relock/internal/testkit/redistest"
)

// BenchmarkGuardCost times a guarded write and the same write without
// the guard, alternately in one loop, and reports both, their ratio, and
// the statements (SQL) or commands (Redis) each sends:
//
//	cd tools && go test -run '^$' -bench GuardCost ./fencecheck/
func BenchmarkGuardCost(b *testing.B) {
	b.Run("sqlite", func(b *testing.B) { s, _ := newSQLite(b); benchCost(b, sqlWrite(s, false), sqlWrite(s, true)) })
	b.Run("postgres", func(b *testing.B) { s, _ := newPostgres(b); benchCost(b, sqlWrite(s, false), sqlWrite(s, true)) })
	b.Run("redis", func(b *testing.B) {
		srv := redistest.StartServer(b)
		var sent atomic.Int64
		rdb := srv.Client(b)
		rdb.AddHook(counter{&sent})
		g := fence.NewRedis(rdb)
		ctx := context.Background()
		benchCost(b, func(i int64) (int64, error) {
			n := sent.Load()
			err := rdb.Set(ctx, "bench:bare", i, 0).Err()
			return sent.Load() - n, err
		}, func(i int64) (int64, error) {
			n := sent.Load()
			err := g.Set(ctx, "bench:guarded", i, i, 0)
			return sent.Load() - n, err
		})
	})
}

// benchCost runs bare and guarded (each returns what it sent) once per
// iteration, with token i.
func benchCost(b *testing.B, bare, guarded func(i int64) (sent int64, err error)) {
	var tBare, tGuarded time.Duration
	var sBare, sGuarded, n int64
	for b.Loop() {
		n++
		t0 := time.Now()
		s, err := bare(n)
		t1 := time.Now()
		sBare += s
		if err != nil {
			b.Fatal(err)
		}
		s, err = guarded(n)
		tBare, tGuarded, sGuarded = tBare+t1.Sub(t0), tGuarded+time.Since(t1), sGuarded+s
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(tBare.Nanoseconds())/float64(n), "bare-ns/op")
	b.ReportMetric(float64(tGuarded.Nanoseconds())/float64(n), "guarded-ns/op")
	b.ReportMetric(float64(tGuarded)/float64(tBare), "ratio")
	b.ReportMetric(float64(sBare)/float64(n), "bare-sent/op")
	b.ReportMetric(float64(sGuarded)/float64(n), "guarded-sent/op")
}

// sqlWrite is one transaction that sets a row's value, with fence.SQL's
// Check first when guarded; it counts the statements it sends.
func sqlWrite(s *sqlStore, guarded bool) func(i int64) (int64, error) {
	ctx := context.Background()
	res := fmt.Sprintf("bench:%v", guarded)
	return func(i int64) (int64, error) {
		tx, err := s.db.BeginTx(ctx, nil)
		if err != nil {
			return 0, err
		}
		q := &counting{Tx: tx}
		if guarded {
			err = s.g.Check(ctx, q, res, i)
		}
		if err == nil {
			err = s.exec(ctx, q, `INSERT INTO fc_data (resource, value) VALUES (?, ?)
ON CONFLICT (resource) DO UPDATE SET value = excluded.value`, res, fmt.Sprint(i))
		}
		if err != nil {
			_ = tx.Rollback()
			return q.n, err
		}
		return q.n, tx.Commit()
	}
}

// counting counts the statements sent through a transaction.
type counting struct {
	*sql.Tx
	n int64
}

func (c *counting) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	c.n++
	return c.Tx.ExecContext(ctx, q, args...)
}

func (c *counting) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	c.n++
	return c.Tx.QueryRowContext(ctx, q, args...)
}

// counter counts the commands a go-redis client sends.
type counter struct{ n *atomic.Int64 }

func (c counter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c counter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { c.n.Add(1); return next(ctx, cmd) }
}

func (c counter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error { c.n.Add(int64(len(cmds))); return next(ctx, cmds) }
}
