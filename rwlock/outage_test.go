package rwlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/testkit/redistest"
	"github.com/relock-go/relock/rwlock"
)

// A reader or writer waiting without a deadline keeps waiting through an
// outage of Redis (the server going away and coming back), whatever
// errors its tries meet meanwhile, and acquires once the lock is free.
func TestWaiterKeepsWaitingThroughAnOutage(t *testing.T) {
	for _, b := range redistest.Backends() {
		for _, side := range []string{"read", "write"} {
			t.Run(b.Name+"/"+side, func(t *testing.T) {
				env := b.New(t)
				ctx := ctxT(t)
				name := "outage"
				holder := rwlock.New(env.NewClient(t), name)
				held, err := holder.Lock(ctx) // a writer holds: both sides wait
				require.NoError(t, err)

				waiter := rwlock.New(env.U(), name)
				lock, unlock := waiter.RLock, waiter.RUnlock
				if side == "write" {
					lock, unlock = waiter.Lock, waiter.Unlock
				}
				type result struct {
					held context.Context
					err  error
				}
				done := make(chan result, 1)
				go func() {
					h, err := lock(ctx)
					done <- result{h, err}
				}()
				require.Eventually(t, func() bool {
					n, err := env.Subscribers(ctx, "redisson_rwlock:{"+name+"}")
					return err == nil && n == 1
				}, 10*time.Second, 5*time.Millisecond, "the waiter subscribes")
				time.Sleep(100 * time.Millisecond)

				if env.Mini != nil {
					env.Mini.Close()
				} else {
					env.Server.Stop()
				}
				time.Sleep(2 * time.Second) // go-redis's dial retries take about a second
				select {
				case r := <-done:
					t.Fatalf("the waiter returned during the outage: %v", r.err)
				default:
				}

				if env.Mini != nil {
					require.NoError(t, env.Mini.Restart())
					require.NoError(t, holder.Unlock(held))
				} else {
					env.Server.Restart(t) // back empty: the lock is free
					if err := holder.Unlock(held); err != nil && !errors.Is(err, rwlock.ErrLockLost) {
						t.Fatalf("holder's unlock: %v", err)
					}
				}
				select {
				case r := <-done:
					require.NoError(t, r.err, "the waiter, after the outage")
					require.NoError(t, unlock(r.held))
				case <-time.After(15 * time.Second):
					t.Fatal("the waiter did not acquire after the outage")
				}
			})
		}
	}
}
