package semaphore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/testkit/redistest"
	"github.com/relock-go/relock/semaphore"
)

// A waiter without a deadline keeps waiting through an outage of Redis
// (the server going away and coming back), whatever errors its tries
// meet meanwhile, and acquires once permits are free.
func TestWaiterKeepsWaitingThroughAnOutage(t *testing.T) {
	for _, b := range redistest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			env := b.New(t)
			ctx := ctxT(t)
			name := "outage"
			holder := semaphore.New(env.NewClient(t), name, 1)
			held, err := holder.Acquire(ctx, 1)
			require.NoError(t, err)

			waiter := semaphore.New(env.U(), name, 1)
			type result struct {
				held context.Context
				err  error
			}
			done := make(chan result, 1)
			go func() {
				h, err := waiter.Acquire(ctx, 1)
				done <- result{h, err}
			}()
			require.Eventually(t, func() bool {
				n, err := env.Subscribers(ctx, "redisson_sc:{"+name+"}")
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
				require.NoError(t, holder.Release(held))
			} else {
				env.Server.Restart(t) // back empty: the permits are free
				if err := holder.Release(held); err != nil && !errors.Is(err, semaphore.ErrLockLost) {
					t.Fatalf("holder's release: %v", err)
				}
			}
			select {
			case r := <-done:
				require.NoError(t, r.err, "the waiter, after the outage")
				require.NoError(t, waiter.Release(r.held))
			case <-time.After(15 * time.Second):
				t.Fatal("the waiter did not acquire after the outage")
			}
		})
	}
}
