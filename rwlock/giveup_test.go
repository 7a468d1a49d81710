package rwlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/testkit/redistest"
	"github.com/relock-go/relock/rwlock"
)

// A writer whose wait ends while Redis is unreachable returns at once: its
// waiting mark (which would only hold readers back until it expires) is
// not withdrawn for the unlock timeout (5 s) past the caller's deadline.
func TestWriterGivingUpWithRedisDownReturnsByItsDeadline(t *testing.T) {
	srv := redistest.StartServer(t)
	holderClient, waiterClient := srv.Client(t), srv.Client(t)
	ctx := ctxT(t)
	const name = "giveup"

	// A reader holds the lock, so the writer waits and marks itself. Its
	// release, with Redis down, gives up soon.
	holder := rwlock.New(holderClient, name, rwlock.WithUnlockTimeout(100*time.Millisecond))
	r, err := holder.RLock(as(ctx, "reader"))
	require.NoError(t, err)
	defer func() { _ = holder.RUnlock(r) }()

	const wait = 1500 * time.Millisecond
	wctx, cancel := context.WithTimeout(as(context.Background(), "writer"), wait)
	defer cancel()
	deadline, _ := wctx.Deadline()
	type res struct {
		err error
		at  time.Time
	}
	done := make(chan res, 1)
	go func() {
		held, err := rwlock.New(waiterClient, name).Lock(wctx)
		if err == nil {
			_ = rwlock.New(waiterClient, name).Unlock(held)
		}
		done <- res{err, time.Now()}
	}()
	waiting := "{" + name + "}:rwlock_write_waiters"
	require.Eventually(t, func() bool {
		n, err := holderClient.ZCard(ctx, waiting).Result()
		return err == nil && n == 1
	}, wait/2, poll, "the writer marks itself as waiting")

	srv.Kill() // Redis is gone: the withdrawal cannot reach it
	var got res
	select {
	case got = <-done:
	case <-time.After(wait + 15*time.Second):
		t.Fatal("the writer did not return")
	}
	require.Error(t, got.err, "no writer can acquire with Redis down")
	late := got.at.Sub(deadline)
	t.Logf("the writer returned %v after its deadline: %v", late.Round(time.Millisecond), got.err)
	require.Less(t, late, time.Second, "the writer returned %v after its deadline", late)
}
