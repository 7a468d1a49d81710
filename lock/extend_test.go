package lock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/testkit/redistest"
	"github.com/relock-go/relock/lock"
	"github.com/relock-go/relock/watchdog"
)

// Extend moves a fixed lease's end in Redis and in the watchdog, keeps
// the fencing token, and refuses what it cannot do.
func TestExtend(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		clk := watchdog.NewFakeClock(time.Now())
		wd := watchdog.New(watchdog.WithClock(clk))
		mu := lock.New(env.Universal, "ext", lock.WithLeaseTime(time.Second), lock.WithWatchdog(wd))
		held, err := mu.Lock(ctx)
		require.NoError(t, err)
		token, _ := mu.FencingToken(held)

		require.NoError(t, mu.Extend(held, 10*time.Second))
		ttl, err := mu.TTL(ctx)
		require.NoError(t, err)
		require.True(t, ttl > 9*time.Second && ttl <= 10*time.Second, "ttl %v", ttl)
		left, _ := lock.Remaining(held)
		require.True(t, left > 9*time.Second, "remaining %v", left)
		again, _ := mu.FencingToken(held)
		require.Equal(t, token, again, "the token is the hold's")

		clk.Advance(2 * time.Second) // past the first lease: still held
		require.NoError(t, held.Err())
		inner, err := mu.Lock(held) // a re-entry writes the extended lease
		require.NoError(t, err)
		ttl, err = mu.TTL(ctx)
		require.NoError(t, err)
		require.True(t, ttl > 9*time.Second, "ttl after re-entry %v", ttl)
		require.NoError(t, mu.Unlock(inner))

		require.ErrorIs(t, mu.Extend(held, 0), lock.ErrInvalidArgument)
		require.ErrorIs(t, mu.Extend(ctx, time.Second), lock.ErrNotHeld, "ctx carries no hold")

		clk.Advance(10 * time.Second) // the extended lease ends
		select {
		case <-held.Done():
		case <-time.After(5 * time.Second):
			t.Fatal("the extended lease did not end")
		}
		require.ErrorIs(t, context.Cause(held), lock.ErrLockLost)
		require.Contains(t, context.Cause(held).Error(), "lease ended")
		require.ErrorIs(t, mu.Extend(held, time.Second), lock.ErrLockLost)
		_ = mu.Unlock(held)
	})
}

func TestExtendRefusesAWatchdogHold(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		mu := lock.New(env.Universal, "ext:wd")
		held, err := mu.Lock(ctx)
		require.NoError(t, err)
		err = mu.Extend(held, time.Minute)
		require.ErrorIs(t, err, lock.ErrInvalidArgument)
		require.Contains(t, err.Error(), "watchdog renews")
		ttl, _ := mu.TTL(ctx)
		require.True(t, ttl <= 30*time.Second, "nothing written: ttl %v", ttl)
		require.NoError(t, mu.Unlock(held))
		require.ErrorIs(t, mu.Extend(held, time.Minute), lock.ErrNotHeld, "after Unlock")
	})
}

// A hold whose key is gone learns it from Extend: lost, at once.
func TestExtendFindsTheKeyGone(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		mu := lock.New(env.Universal, "ext:gone", lock.WithLeaseTime(time.Minute))
		held, err := mu.Lock(ctx)
		require.NoError(t, err)
		require.NoError(t, env.Universal.Del(ctx, "ext:gone").Err())
		err = mu.Extend(held, time.Minute)
		require.True(t, errors.Is(err, lock.ErrLockLost), "%v", err)
		<-held.Done()
		require.ErrorIs(t, context.Cause(held), lock.ErrLockLost)
		require.Equal(t, int64(0), env.Universal.Exists(ctx, "ext:gone").Val(), "nothing written")
	})
}
