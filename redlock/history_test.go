package redlock_test

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/core"
	"github.com/relock-go/relock/internal/scripts"
	"github.com/relock-go/relock/internal/testkit/history"
	"github.com/relock-go/relock/internal/testkit/redistest"
	"github.com/relock-go/relock/lock"
	"github.com/relock-go/relock/redlock"
)

// histMasters starts n independent servers of backend b and returns, per
// "process", one client of each.
func histMasters(t *testing.T, b redistest.Backend, n, processes int) [][]redis.UniversalClient {
	t.Helper()
	procs := make([][]redis.UniversalClient, processes)
	for range n {
		env := b.New(t)
		addr := ""
		switch {
		case env.Mini != nil:
			addr = env.Mini.Addr()
		case env.Server != nil:
			addr = env.Server.Addr
		default:
			t.Fatalf("env has neither miniredis nor a redis-server")
		}
		procs[0] = append(procs[0], env.Client)
		for p := 1; p < processes; p++ {
			c := redis.NewClient(&redis.Options{Addr: addr})
			t.Cleanup(func() { _ = c.Close() })
			procs[p] = append(procs[p], c)
		}
	}
	return procs
}

// TestHistoryRedlockContention: two processes of three goroutines each,
// over three masters, take a quorum Redlock, an all-of multi-lock of two
// resources, and a plain lock on one of those resources, and record every
// hold under the resource it excludes. The record must show no overlap.
// Fencing tokens are checked for the multi-lock, whose token (the largest
// of its members') grows with every hold since every member's does; a
// quorum Redlock's token is advisory (two holds may share no member whose
// counter orders them) and is not checked.
// histLock is a Redlock or a Mutex taken without options: each package
// takes options of its own, so the two have no Lock method in common.
type histLock struct {
	lock   func(context.Context) (context.Context, error)
	unlock func(context.Context) error
	drain  func(context.Context) error // a Redlock's
}

func histLockOf[O any](l interface {
	Lock(context.Context, ...O) (context.Context, error)
	Unlock(context.Context) error
}) histLock {
	h := histLock{lock: func(ctx context.Context) (context.Context, error) { return l.Lock(ctx) }, unlock: l.Unlock}
	if d, ok := l.(interface{ Drain(context.Context) error }); ok {
		h.drain = d.Drain
	}
	return h
}

func TestHistoryRedlockContention(t *testing.T) {
	for _, b := range redistest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			procs := histMasters(t, b, 3, 2)
			const perProc, iters = 3, 8
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()

			h := history.New()
			var quorum, multi, single atomic.Int64
			var wg sync.WaitGroup
			for p, cs := range procs {
				for g := range perProc {
					rng := rand.New(rand.NewPCG(uint64(p), uint64(g)))
					wg.Go(func() {
						for range iters {
							var l histLock
							// The resources the hold excludes others from, and
							// whether its fencing token is checked under that name.
							type res struct {
								name  string
								token bool
							}
							var names []res
							switch rng.IntN(3) {
							case 0:
								l = histLockOf[redlock.LockOption](redlock.New([]redlock.Member{lock.New(cs[0], "hist:q"), lock.New(cs[1], "hist:q"), lock.New(cs[2], "hist:q")}))
								names = []res{{"redlock hist:q", false}}
								quorum.Add(1)
							case 1:
								l = histLockOf[redlock.LockOption](redlock.NewMulti([]redlock.Member{lock.New(cs[0], "hist:x"), lock.New(cs[1], "hist:y")}))
								names = []res{{"hist:x", false}, {"hist:y", false}, {"multi hist:x,hist:y", true}}
								multi.Add(1)
							default:
								l = histLockOf[lock.LockOption](lock.New(cs[0], "hist:x"))
								names = []res{{"hist:x", true}}
								single.Add(1)
							}
							held, err := l.lock(ctx)
							if err != nil {
								t.Errorf("lock %v: %v", names, err)
								return
							}
							acquired := time.Now()
							time.Sleep(time.Duration(rng.IntN(500)) * time.Microsecond)
							released := time.Now()
							if err := l.unlock(held); err != nil {
								t.Errorf("unlock %v: %v", names, err)
								return
							}
							// Unlock returns once a quorum released; the other
							// members' releases run on in the background.
							if l.drain != nil {
								if err := l.drain(ctx); err != nil {
									t.Errorf("drain %v: %v", names, err)
									return
								}
							}
							id, _ := core.Owner(held)
							tok, ok := lock.FencingToken(held)
							for _, r := range names {
								h.Add(history.Hold{Lock: r.name, Owner: id, Kind: history.Exclusive, Acquired: acquired, Released: released,
									Token: tok, HasToken: ok && r.token})
							}
						}
					})
				}
			}
			wg.Wait()
			require.False(t, t.Failed())
			require.Positive(t, quorum.Load())
			require.Positive(t, multi.Load())
			require.Positive(t, single.Load())
			require.Equal(t, int(quorum.Load()+3*multi.Load()+single.Load()), h.Len())
			require.NoError(t, h.Err())
			for i, c := range procs[0] {
				ks, err := c.Keys(ctx, "*").Result()
				require.NoError(t, err)
				for _, k := range ks {
					counter := false
					for _, name := range []string{"hist:q", "hist:x", "hist:y"} {
						counter = counter || k == scripts.Prefix("redisson_lock_token", name)
					}
					require.True(t, counter, "master %d: key %q left after every hold was released", i, k)
				}
			}
			t.Logf("%d quorum, %d multi, %d single holds", quorum.Load(), multi.Load(), single.Load())
		})
	}
}
