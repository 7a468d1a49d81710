package semaphore_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/testkit/redistest"
	"github.com/relock-go/relock/semaphore"
)

// A waiter whose wait ends while Redis is unreachable returns at once: its
// queue entry (which would only hold later waiters back until it expires)
// is not withdrawn for the unlock timeout (5 s) past the caller's
// deadline.
func TestWaiterGivingUpWithRedisDownReturnsByItsDeadline(t *testing.T) {
	srv := redistest.StartServer(t)
	holderClient, waiterClient := srv.Client(t), srv.Client(t)
	ctx := ctxT(t)
	const name = "giveup"

	// The holder's release, with Redis down, gives up soon.
	holder := semaphore.New(holderClient, name, 1, semaphore.WithUnlockTimeout(100*time.Millisecond))
	held, err := holder.Acquire(ctx, 1)
	require.NoError(t, err)
	defer func() { _ = holder.Release(held) }()

	const wait = 1500 * time.Millisecond
	wctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	deadline, _ := wctx.Deadline()
	type res struct {
		err error
		at  time.Time
	}
	done := make(chan res, 1)
	go func() {
		s := semaphore.New(waiterClient, name, 1)
		got, err := s.Acquire(wctx, 1)
		if err == nil {
			_ = s.Release(got)
		}
		done <- res{err, time.Now()}
	}()
	waiters := "{" + name + "}:waiters"
	require.Eventually(t, func() bool {
		n, err := holderClient.ZCard(ctx, waiters).Result()
		return err == nil && n == 1
	}, wait/2, 5*time.Millisecond, "the waiter queues in Redis")

	srv.Kill() // Redis is gone: the withdrawal cannot reach it
	var got res
	select {
	case got = <-done:
	case <-time.After(wait + 15*time.Second):
		t.Fatal("the waiter did not return")
	}
	require.Error(t, got.err, "no waiter can acquire with Redis down")
	late := got.at.Sub(deadline)
	t.Logf("the waiter returned %v after its deadline: %v", late.Round(time.Millisecond), got.err)
	require.Less(t, late, time.Second, "the waiter returned %v after its deadline", late)
}
