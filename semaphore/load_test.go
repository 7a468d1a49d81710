package semaphore_test

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/semaphore"
)

// span is one holder's time inside: from after Acquire returned to before
// Release was called.
type span struct {
	start, end time.Time
	weight     int64
}

// maxOverlap is the largest total weight inside at one instant of the
// recorded history (a sweep over the start and end events; an end at the
// same instant as a start is counted first).
func maxOverlap(h []span) int64 {
	type event struct {
		at time.Time
		d  int64
	}
	evs := make([]event, 0, 2*len(h))
	for _, s := range h {
		evs = append(evs, event{s.start, s.weight}, event{s.end, -s.weight})
	}
	slices.SortFunc(evs, func(a, b event) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return int(a.d - b.d) // ends first
	})
	var cur, top int64
	for _, e := range evs {
		cur += e.d
		top = max(top, cur)
	}
	return top
}

// TestLoadNeverAboveSize: 12 goroutines on 3 clients (separate connection
// pools and queue hubs, as 3 processes would have) take 1 or 2 of 4
// permits, 20 times each. The total weight inside, recorded at every entry
// and exit, never goes above the size, and reaches it (the permits really
// are shared, not serialised); every iteration completes in bounded time.
func TestLoadNeverAboveSize(t *testing.T) {
	each(t, func(t *testing.T, env *env) {
		const (
			size       = 4
			goroutines = 12
			iterations = 20
		)
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		clients := []redis.UniversalClient{env.Universal, env.secondClient(t), env.secondClient(t)}
		var (
			inside, maxInside atomic.Int64
			above             atomic.Int32
			done              atomic.Int64
			mu                sync.Mutex
			history           []span
			wg                sync.WaitGroup
		)
		start := time.Now()
		for g := range goroutines {
			s := semaphore.New(clients[g%len(clients)], "load", size)
			weight := int64(1 + g%2)
			wg.Go(func() {
				for i := range iterations {
					held, err := s.Acquire(ctx, weight)
					if err != nil {
						t.Errorf("goroutine %d iteration %d: %v", g, i, err)
						return
					}
					in := time.Now()
					v := inside.Add(weight)
					if v > size {
						above.Add(1)
					}
					for m := maxInside.Load(); v > m && !maxInside.CompareAndSwap(m, v); m = maxInside.Load() {
					}
					time.Sleep(time.Duration(1+i%3) * time.Millisecond)
					inside.Add(-weight)
					out := time.Now()
					if err := s.Release(held); err != nil {
						t.Errorf("goroutine %d iteration %d: release: %v", g, i, err)
						return
					}
					done.Add(1)
					mu.Lock()
					history = append(history, span{in, out, weight})
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		took := time.Since(start)
		t.Logf("%d acquisitions in %v (%.0f/s), max weight inside %d of %d, by the history %d",
			done.Load(), took, float64(done.Load())/took.Seconds(), maxInside.Load(), size, maxOverlap(history))

		require.EqualValues(t, goroutines*iterations, done.Load(), "every iteration completed")
		require.Less(t, took, 45*time.Second)
		require.Zero(t, above.Load(), "more than size inside at once")
		require.LessOrEqual(t, maxInside.Load(), int64(size))
		require.LessOrEqual(t, maxOverlap(history), int64(size))
		require.EqualValues(t, size, maxInside.Load(), "the permits are shared: size inside at some point")

		s := semaphore.New(env.Universal, "load", size)
		require.EqualValues(t, size, available(t, s), "every permit came back")
		require.Zero(t, marks(t, env.Universal, "load"), "no waiter mark left behind")
		n, err := env.Universal.ZCard(ctx, "{load}:permits").Result()
		require.NoError(t, err)
		require.Zero(t, n, "no permit left")
	})
}
