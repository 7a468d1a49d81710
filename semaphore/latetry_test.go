package semaphore_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/testkit/redistest"
	"github.com/relock-go/relock/semaphore"
)

// TestLateTryThatFoundItHeldLeavesNothingToGiveBack: a waiter gives up
// while its try is on its way; the try lands later and finds the permits
// taken. Nothing of it is left in Redis, so nothing is sent after it: a
// churn of such waiters must not queue a give-back each in front of the
// next caller's try.
func TestLateTryThatFoundItHeldLeavesNothingToGiveBack(t *testing.T) {
	each(t, func(t *testing.T, env *env) {
		ctx := ctxT(t)
		const name = "late-held"
		a := semaphore.New(env.Universal, name, 1)
		held, err := a.Acquire(ctx, 1)
		require.NoError(t, err)

		c := env.NewClient(t)
		tries := redistest.NewScriptFaults(semaphore.AcquireScriptSource())
		releases := redistest.NewScriptFaults(semaphore.ReleaseScriptSource())
		c.AddHook(tries)
		c.AddHook(releases)
		b := semaphore.New(c, name, 1)
		_, err = b.TryAcquire(ctx, 1) // c knows its server and the script
		require.ErrorIs(t, err, semaphore.ErrNotAcquired)
		landed := make(chan struct{})
		tries.AfterNext(func() { time.Sleep(200 * time.Millisecond); close(landed) })
		wctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
		defer cancel()
		_, err = b.Acquire(wctx, 1)
		require.ErrorIs(t, err, semaphore.ErrNotAcquired)
		<-landed
		time.Sleep(300 * time.Millisecond) // what follows the late try has gone out
		t.Logf("release scripts sent after a late try that found the permit held: %d", releases.Seen.Load())
		require.Zero(t, releases.Seen.Load())
		require.Zero(t, marks(t, env.Universal, name))
		require.NoError(t, a.Release(held))
	})
}
