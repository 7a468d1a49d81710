package semaphore_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/testkit/redistest"
	"github.com/relock-go/relock/semaphore"
)

// newLoseReplies makes the acquire script's next n replies look lost to
// a read timeout, after Redis ran it.
func newLoseReplies(n int32) *redistest.ScriptFaults {
	f := redistest.NewScriptFaults(semaphore.AcquireScriptSource())
	f.Lose.Store(n)
	return f
}

// TestLostAcquireReplyGivenBack: TryAcquire's script takes the permits
// but its reply is lost: TryAcquire reports the error, and the permits
// nobody was told of come back at once, not when their lease ends.
func TestLostAcquireReplyGivenBack(t *testing.T) {
	each(t, func(t *testing.T, env *env) {
		ctx := ctxT(t)
		lossy := env.NewClient(t)
		lossy.AddHook(newLoseReplies(1))
		_, err := semaphore.New(lossy, "lost", 3).TryAcquire(ctx, 2)
		require.ErrorIs(t, err, os.ErrDeadlineExceeded)
		require.ErrorContains(t, err, `tryacquire semaphore "lost"`)
		s := semaphore.New(env.Universal, "lost", 3)
		require.Eventually(t, func() bool {
			n, err := s.Available(ctx)
			return err == nil && n == 3
		}, 5*time.Second, time.Millisecond, "the lost permits were given back")
	})
}

// TestLostAcquireReplyRetryFindsPermit: a waiter's try takes the permits
// but its reply is lost; the wait goes on, and the next try finds its own
// permit instead of taking more.
func TestLostAcquireReplyRetryFindsPermit(t *testing.T) {
	each(t, func(t *testing.T, env *env) {
		ctx := ctxT(t)
		s := semaphore.New(env.Universal, "lost-wait", 3)
		all, err := s.Acquire(ctx, 3)
		require.NoError(t, err)
		lossy := env.NewClient(t)
		hook := newLoseReplies(0)
		lossy.AddHook(hook)
		w := semaphore.New(lossy, "lost-wait", 3)
		done := make(chan error, 1)
		var got context.Context
		go func() {
			var err error
			got, err = w.Acquire(ctx, 2)
			done <- err
		}()
		require.Eventually(t, func() bool { return hook.Seen.Load() >= 2 }, 5*time.Second, time.Millisecond, "the waiter tried twice")
		hook.Lose.Store(1)
		require.NoError(t, s.Release(all))
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(10 * time.Second):
			t.Fatal("the waiter did not get its permits")
		}
		n, err := s.Available(ctx)
		require.NoError(t, err)
		require.EqualValues(t, 1, n, "the retry did not take 2 more")
		require.NoError(t, w.Release(got))
		n, err = s.Available(ctx)
		require.NoError(t, err)
		require.EqualValues(t, 3, n)
	})
}
