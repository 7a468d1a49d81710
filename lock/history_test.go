package lock_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
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
)

// histRecord adds the hold that held returned, [acquired, now), when
// unlock (called right after) succeeds: a hold whose release fails was
// lost, did not last until now on the server, and fails the test.
func histRecord(t *testing.T, h *history.History, name string, held context.Context, acquired time.Time, kind history.Kind,
	token func(context.Context) (int64, bool), unlock func(context.Context) error) {
	released := time.Now()
	if err := unlock(held); err != nil {
		t.Errorf("release %q: %v", name, err)
		return
	}
	id, _ := core.Owner(held)
	tok, ok := token(held)
	h.Add(history.Hold{Lock: name, Owner: id, Kind: kind, Token: tok, HasToken: ok, Acquired: acquired, Released: released})
}

// histLeftovers lists the keys left that are not the fencing counters or
// unlock latches of names (which outlive a hold on purpose).
func histLeftovers(t *testing.T, c redis.UniversalClient, names ...string) []string {
	t.Helper()
	ks, err := c.Keys(context.Background(), "*").Result()
	require.NoError(t, err)
	var left []string
	for _, k := range ks {
		ok := false
		for _, name := range names {
			if k == scripts.Prefix("redisson_lock_token", name) || strings.HasPrefix(k, scripts.Prefix("redisson_unlock_latch", name)+":") ||
				strings.HasPrefix(k, scripts.Prefix("relock_acquire_latch", name)+":") {
				ok = true
			}
		}
		if !ok {
			left = append(left, k)
		}
	}
	return left
}

// TestHistoryLockContention: two processes of six goroutines each take a
// few locks by Lock and TryLock, half the time re-entering, and record
// every hold; the record must show no overlap between owners and fencing
// tokens increasing in acquisition order, re-entries included.
func TestHistoryLockContention(t *testing.T) {
	for _, b := range redistest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			env := b.New(t)
			procs := []redis.UniversalClient{env.Client, env.NewClient(t)}
			names := []string{"hist:a", "hist:{b}", "{hist}:c"}
			const perProc, iters = 6, 15
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()

			h := history.New()
			var holds, busy, reentered atomic.Int64
			var wg sync.WaitGroup
			for p, c := range procs {
				for g := range perProc {
					rng := rand.New(rand.NewPCG(uint64(p), uint64(g)))
					wg.Go(func() {
						for range iters {
							name := names[rng.IntN(len(names))]
							mu := lock.New(c, name)
							var held context.Context
							var err error
							if rng.IntN(4) == 0 {
								held, err = mu.TryLock(ctx)
								if errors.Is(err, lock.ErrNotAcquired) {
									busy.Add(1)
									continue
								}
							} else {
								held, err = mu.Lock(ctx)
							}
							if err != nil {
								t.Errorf("lock %q: %v", name, err)
								return
							}
							acquired := time.Now()
							if rng.IntN(2) == 0 {
								// Another handle of the same name re-enters.
								inner, err := lock.New(c, name).Lock(held)
								if err != nil {
									t.Errorf("re-enter %q: %v", name, err)
									return
								}
								innerAt := time.Now()
								time.Sleep(time.Duration(rng.IntN(200)) * time.Microsecond)
								histRecord(t, h, name, inner, innerAt, history.Exclusive, lock.FencingToken, mu.Unlock)
								reentered.Add(1)
							}
							time.Sleep(time.Duration(rng.IntN(300)) * time.Microsecond)
							histRecord(t, h, name, held, acquired, history.Exclusive, lock.FencingToken, mu.Unlock)
							holds.Add(1)
						}
					})
				}
			}
			wg.Wait()
			require.False(t, t.Failed())
			require.Equal(t, int64(len(procs)*perProc*iters), holds.Load()+busy.Load())
			require.Positive(t, holds.Load())
			require.Equal(t, int(holds.Load()+reentered.Load()), h.Len())
			require.NoError(t, h.Err())
			for _, name := range names {
				locked, err := lock.New(env.Client, name).IsLocked(ctx)
				require.NoError(t, err)
				require.False(t, locked, name)
			}
			require.Empty(t, histLeftovers(t, env.Client, names...))
			t.Logf("%d holds (%d re-entries), %d TryLock found it held", holds.Load(), reentered.Load(), busy.Load())
		})
	}
}

// TestHistoryLockFindsLapsedLease is the negative control: a fixed lease
// that runs out while its holder still works lets a second owner in, and
// the record of the two holds, taken exactly as above, shows the overlap.
func TestHistoryLockFindsLapsedLease(t *testing.T) {
	for _, b := range redistest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			env := b.New(t)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			const lease = 200 * time.Millisecond
			h := history.New()
			first := lock.New(env.Client, "hist:lapse", lock.WithLeaseTime(lease))
			second := lock.New(env.NewClient(t), "hist:lapse")

			h1, err := first.Lock(ctx)
			require.NoError(t, err)
			a1 := time.Now()
			tok1, ok1 := lock.FencingToken(h1) // read while the hold lasts
			env.FastForward(lease + 100*time.Millisecond)
			h2, err := second.TryLock(ctx)
			require.NoError(t, err, "the lease has run out on the server")
			a2 := time.Now()
			tok2, ok2 := lock.FencingToken(h2)
			r1 := time.Now()
			_ = first.Unlock(h1) // lost; its error is not what this test is about
			r2 := time.Now()
			require.NoError(t, second.Unlock(h2))
			for _, x := range []struct {
				held     context.Context
				tok      int64
				ok       bool
				from, to time.Time
			}{{h1, tok1, ok1, a1, r1}, {h2, tok2, ok2, a2, r2}} {
				id, _ := core.Owner(x.held)
				require.True(t, x.ok)
				h.Add(history.Hold{Lock: "hist:lapse", Owner: id, Kind: history.Exclusive, Token: x.tok, HasToken: x.ok, Acquired: x.from, Released: x.to})
			}
			vs := h.Check()
			require.Len(t, vs, 1, "%v", vs)
			require.Equal(t, history.Overlap, vs[0].Problem)
		})
	}
}
