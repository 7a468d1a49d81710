package semaphore_test

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
	"github.com/relock-go/relock/semaphore"
)

// histLeftovers lists the keys left once every permit of the semaphores
// names was released, apart from what outlives the permits on purpose:
// the hash that records the size (with used 0) and the unlock latches.
func histLeftovers(t *testing.T, c redis.UniversalClient, names ...string) []string {
	t.Helper()
	ctx := context.Background()
	ks, err := c.Keys(ctx, "*").Result()
	require.NoError(t, err)
	var left []string
	for _, k := range ks {
		ok := false
		for _, name := range names {
			switch {
			case strings.HasPrefix(k, scripts.Prefix("redisson_unlock_latch", name)+":"):
				ok = true
			case k == name:
				used, err := c.HGet(ctx, name, "used").Result()
				require.NoError(t, err)
				ok = used == "0"
			}
		}
		if !ok {
			left = append(left, k)
		}
	}
	return left
}

// TestHistorySemaphoreContention: two processes of six goroutines each
// take 1 to 3 of 3 permits of two semaphores, by Acquire and TryAcquire,
// and record every acquisition; at no instant may the recorded holds of a
// semaphore add up to more than its size.
func TestHistorySemaphoreContention(t *testing.T) {
	for _, b := range redistest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			env := b.New(t)
			procs := []redis.UniversalClient{env.Client, env.NewClient(t)}
			names := []string{"hist:sem:a", "hist:sem:{b}"}
			const size, perProc, iters = 3, 6, 15
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()

			h := history.New()
			var holds, busy atomic.Int64
			var wg sync.WaitGroup
			for p, c := range procs {
				for g := range perProc {
					rng := rand.New(rand.NewPCG(uint64(p), uint64(g)))
					wg.Go(func() {
						for range iters {
							name := names[rng.IntN(len(names))]
							s := semaphore.New(c, name, size)
							n := 1 + rng.Int64N(size)
							var held context.Context
							var err error
							if rng.IntN(4) == 0 {
								held, err = s.TryAcquire(ctx, n)
								if errors.Is(err, semaphore.ErrNotAcquired) {
									busy.Add(1)
									continue
								}
							} else {
								held, err = s.Acquire(ctx, n)
							}
							if err != nil {
								t.Errorf("acquire %d of %q: %v", n, name, err)
								return
							}
							acquired := time.Now()
							time.Sleep(time.Duration(rng.IntN(300)) * time.Microsecond)
							released := time.Now()
							if err := s.Release(held); err != nil {
								t.Errorf("release %d of %q: %v", n, name, err)
								return
							}
							id, _ := core.Owner(held)
							h.Add(history.Hold{Lock: name, Owner: id, Kind: history.Permits, N: n, Size: size, Acquired: acquired, Released: released})
							holds.Add(1)
						}
					})
				}
			}
			wg.Wait()
			require.False(t, t.Failed())
			require.Equal(t, int64(len(procs)*perProc*iters), holds.Load()+busy.Load())
			require.Positive(t, holds.Load())
			require.Equal(t, int(holds.Load()), h.Len())
			require.NoError(t, h.Err())
			for _, name := range names {
				avail, err := semaphore.New(env.Client, name, size).Available(ctx)
				require.NoError(t, err)
				require.EqualValues(t, size, avail, name)
			}
			require.Empty(t, histLeftovers(t, env.Client, names...))
			t.Logf("%d acquisitions, %d TryAcquire found too few", holds.Load(), busy.Load())
		})
	}
}

// TestHistorySemaphoreFindsLapsedPermits is the negative control: permits
// whose fixed lease runs out while their holder still works are reclaimed
// and granted again, and the record shows more permits in use than exist.
func TestHistorySemaphoreFindsLapsedPermits(t *testing.T) {
	for _, b := range redistest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			env := b.New(t)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			const lease = 200 * time.Millisecond
			first := semaphore.New(env.Client, "hist:sem:lapse", 2, semaphore.WithLeaseTime(lease))
			second := semaphore.New(env.NewClient(t), "hist:sem:lapse", 2)

			// The scripts read the server's TIME, which miniredis takes from
			// the wall clock unless pinned: pin it, then move it past the lease.
			base := time.Now()
			if env.Mini != nil {
				env.Mini.SetTime(base)
			}
			h1, err := first.Acquire(ctx, 2)
			require.NoError(t, err)
			a1 := time.Now()
			if env.Mini != nil {
				env.Mini.SetTime(base.Add(lease + 100*time.Millisecond))
			}
			env.FastForward(lease + 100*time.Millisecond)
			h2, err := second.TryAcquire(ctx, 1)
			require.NoError(t, err, "the first permits' lease has run out on the server")
			a2 := time.Now()
			r1 := time.Now()
			_ = first.Release(h1) // lost; its error is not what this test is about
			r2 := time.Now()
			require.NoError(t, second.Release(h2))

			h := history.New()
			h.Add(history.Hold{Lock: "hist:sem:lapse", Kind: history.Permits, N: 2, Size: 2, Acquired: a1, Released: r1})
			h.Add(history.Hold{Lock: "hist:sem:lapse", Kind: history.Permits, N: 1, Size: 2, Acquired: a2, Released: r2})
			vs := h.Check()
			require.Len(t, vs, 1, "%v", vs)
			require.Equal(t, history.OverCapacity, vs[0].Problem)
		})
	}
}
