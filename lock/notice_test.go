package lock_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/testkit/redistest"
	"github.com/relock-go/relock/lock"
)

// With WithForceUnlockNotice, a ForceUnlock made by another process (here
// another client, with its own hub) ends the hold at once, not at its next
// renewal 10 s later.
func TestForceUnlockNoticeFromAnotherProcess(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		mu := lock.New(env.Universal, "notice", lock.WithForceUnlockNotice())
		held, err := mu.Lock(ctx)
		require.NoError(t, err)
		inner, err := mu.Lock(held) // a re-entry shares the notice
		require.NoError(t, err)

		other := env.NewClient(t)
		ok, err := lock.New(other, "notice").ForceUnlock(ctx)
		require.NoError(t, err)
		require.True(t, ok)
		select {
		case <-held.Done():
			require.ErrorIs(t, context.Cause(held), lock.ErrLockLost)
			require.Contains(t, context.Cause(held).Error(), "force-unlocked")
		case <-time.After(5 * time.Second):
			t.Fatal("the holder did not hear of the ForceUnlock")
		}
		<-inner.Done()
		require.ErrorIs(t, mu.Unlock(inner), lock.ErrLockLost)
		require.ErrorIs(t, mu.Unlock(held), lock.ErrLockLost)

		// A hold released normally hears nothing of its own unlock
		// message, and the next hold is untouched by the former's notice.
		first, err := mu.Lock(ctx)
		require.NoError(t, err)
		require.NoError(t, mu.Unlock(first))
		next, err := lock.New(other, "notice").Lock(ctx)
		require.NoError(t, err)
		second, err := mu.Lock(ctx, lock.WithWaitTimeout(50*time.Millisecond))
		require.ErrorIs(t, err, lock.ErrNotAcquired)
		require.Nil(t, second)
		require.NoError(t, lock.New(other, "notice").Unlock(next))
	})
}
