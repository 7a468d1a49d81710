package core_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/conn"
	"github.com/relock-go/relock/internal/core"
	"github.com/relock-go/relock/internal/testkit/redistest"
)

// heapAfterGC is the live heap once garbage has been collected.
func heapAfterGC() uint64 {
	var ms runtime.MemStats
	for range 3 {
		runtime.GC()
	}
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// TestClosedClientsLeaveNothing makes and closes 10,000 clients, each with
// a hub (every tenth opening a pub/sub connection with a waiter): once
// they are dropped the hubs are gone, and the heap and the goroutines come
// back.
func TestClosedClientsLeaveNothing(t *testing.T) {
	for _, b := range redistest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			env := b.New(t)
			addr := env.Client.Options().Addr
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			hubsBefore, goroutines, heap := core.Hubs(), runtime.NumGoroutine(), heapAfterGC()

			const clients = 10000
			for i := range clients {
				c := redis.NewClient(&redis.Options{Addr: addr})
				h := core.For(conn.Of(c))
				require.Same(t, h, core.For(conn.Of(c)), "one hub per client")
				if i%10 == 0 {
					w, err := h.Join(ctx, fmt.Sprintf("footprint:%d", i), false)
					require.NoError(t, err)
					w.Leave(false, 0)
				}
				require.NoError(t, c.Close())
			}
			require.Eventually(t, func() bool {
				runtime.GC()
				return core.Hubs() <= hubsBefore
			}, 30*time.Second, 10*time.Millisecond, "the hubs of dropped clients are gone")
			// Polled here, not in require.Eventually, whose condition runs
			// on goroutines of its own.
			for deadline := time.Now().Add(10 * time.Second); runtime.NumGoroutine() > goroutines && time.Now().Before(deadline); {
				time.Sleep(10 * time.Millisecond)
			}
			require.LessOrEqual(t, runtime.NumGoroutine(), goroutines, "the goroutines of the dropped clients' hubs are gone")
			grown := int64(heapAfterGC()) - int64(heap)
			t.Logf("%d clients made and dropped: heap %+d B, goroutines %d -> %d", clients, grown, goroutines, runtime.NumGoroutine())
			require.Less(t, grown, int64(4<<20), "the heap came back")
		})
	}
}

// TestIdleNamesLeaveNothing queues, hands over and leaves on 100,000
// distinct names through one hub: once each name is idle, the hub keeps
// nothing of it (no queue, hand-off counter or subscription).
func TestIdleNamesLeaveNothing(t *testing.T) {
	for _, b := range redistest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			env := b.New(t)
			h := core.For(conn.Of(env.Client))
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			heap := heapAfterGC()

			const names, workers = 100000, 64
			var wg sync.WaitGroup
			errs := make(chan error, workers)
			for g := range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := g; i < names; i += workers {
						ch := fmt.Sprintf("redisson_lock__channel:{idle:%d}", i)
						w, err := h.Join(ctx, ch, false)
						if err != nil {
							errs <- err
							return
						}
						if i%10 != 0 {
							w.Leave(false, 0)
							continue
						}
						// A hand-off: w is given the lock and leaves with
						// it. Its release (a Reserve that finds no waiter)
						// ends the chain; or its hold is lost, never
						// released, and a later waiter gives up.
						w.Claim("me", claimant("me"))
						r, _ := h.Reserve(ch, core.Pick{Head: true}, nil)
						if len(r) != 1 || r[0] != w {
							errs <- fmt.Errorf("%s: not reserved", ch)
							return
						}
						r[0].End(core.Handed, core.Grant{})
						if _, ok := w.Leave(true, time.Second); !ok {
							errs <- fmt.Errorf("%s: not granted", ch)
							return
						}
						if i%20 == 0 {
							w2, err := h.Join(ctx, ch, false)
							if err != nil {
								errs <- err
								return
							}
							w2.Leave(false, 0)
							continue
						}
						if n, _ := h.Reserve(ch, core.Pick{Head: true}, nil); n != nil {
							errs <- fmt.Errorf("%s: reserved with no waiter", ch)
							return
						}
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				require.NoError(t, err)
			}
			require.Eventually(t, func() bool {
				q, ho, chans := h.Footprint()
				return q == 0 && ho == 0 && chans == 0
			}, 10*time.Second, 10*time.Millisecond, "the hub keeps nothing of idle names")
			grown := int64(heapAfterGC()) - int64(heap)
			t.Logf("%d names used and idle: heap %+d B", names, grown)
			require.Less(t, grown, int64(4<<20), "the heap came back")
		})
	}
}
