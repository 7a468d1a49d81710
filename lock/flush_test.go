package lock_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/testkit/redistest"
	"github.com/relock-go/relock/lock"
)

// TestWaitersWakeWhenTheHolderFindsItsKeyGone: the key of a held lock is
// flushed (FLUSHALL: no unlock message). The holder's process learns it
// at its next renewal; from then on every waiter, in the holder's process
// and in another, gets the lock within 1 s, instead of sleeping out the
// TTL it last saw (9 s here).
func TestWaitersWakeWhenTheHolderFindsItsKeyGone(t *testing.T) {
	srv := redistest.StartServer(t)
	holderClient, otherClient, admin := srv.Client(t), srv.Client(t), srv.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const name, lease = "flushed", 9 * time.Second // renewed every 3 s
	held, err := lock.New(holderClient, name, lock.WithWatchdogTimeout(lease)).Lock(ctx)
	require.NoError(t, err)

	got := make(chan time.Time, 2)
	var wg sync.WaitGroup
	for _, c := range []struct {
		name string
		mu   *lock.Mutex
	}{
		{"holder's process", lock.New(holderClient, name, lock.WithWatchdogTimeout(lease))},
		{"another process", lock.New(otherClient, name, lock.WithWatchdogTimeout(lease))},
	} {
		wg.Go(func() {
			h, err := c.mu.Lock(ctx)
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
				return
			}
			got <- time.Now()
			require.NoError(t, c.mu.Unlock(h))
		})
	}
	// both waiters have tried and sleep on the lock's TTL
	require.Eventually(t, func() bool {
		n, err := admin.PubSubNumSub(ctx, "redisson_lock__channel:{"+name+"}").Result()
		return err == nil && n["redisson_lock__channel:{"+name+"}"] == 2
	}, 5*time.Second, 10*time.Millisecond)
	time.Sleep(100 * time.Millisecond)
	require.NoError(t, admin.FlushAll(ctx).Err())
	select {
	case <-held.Done():
	case <-time.After(lease):
		t.Fatal("the holder did not learn that its key is gone")
	}
	learnt := time.Now()
	require.ErrorIs(t, context.Cause(held), lock.ErrLockLost)
	for range 2 {
		select {
		case at := <-got:
			t.Logf("a waiter got the lock %v after the holder learnt", at.Sub(learnt))
			require.LessOrEqual(t, at.Sub(learnt), time.Second)
		case <-time.After(lease):
			t.Fatal("a waiter slept on")
		}
	}
	wg.Wait()
}
