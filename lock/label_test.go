package lock_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/core"
	"github.com/relock-go/relock/internal/scripts"
	"github.com/relock-go/relock/internal/testkit/redistest"
	"github.com/relock-go/relock/lock"
	"github.com/relock-go/relock/watchdog"
)

// A holder label lives beside the hold, with its lease, renewed with it
// and gone with it; a labeled contender is told who holds the lock.
func TestHolderLabel(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		clk := watchdog.NewFakeClock(time.Now())
		wd := watchdog.New(watchdog.WithClock(clk))
		mu := lock.New(env.Universal, "labeled", lock.WithHolderLabel("pod-7"), lock.WithWatchdog(wd))
		held, err := mu.Lock(ctx)
		require.NoError(t, err)
		id, _ := core.Owner(held)
		key := scripts.HolderLabel("labeled", id)
		v, err := env.Universal.Get(ctx, key).Result()
		require.NoError(t, err)
		require.True(t, strings.HasPrefix(v, "pod-7\t"), v)
		ttl := env.Universal.PTTL(ctx, key).Val()
		require.True(t, ttl > 25*time.Second && ttl <= 30*time.Second, "label ttl %v", ttl)

		inner, err := mu.Lock(held) // a re-entry: the label stays one
		require.NoError(t, err)
		require.NoError(t, mu.Unlock(inner))
		require.Equal(t, int64(1), env.Universal.Exists(ctx, key).Val())

		if env.Mini != nil { // the label is renewed with the hold
			for clk.Pending() == 0 {
				time.Sleep(time.Millisecond)
			}
			before := wd.Stats().Renewed
			env.Mini.FastForward(10 * time.Second)
			clk.Advance(10 * time.Second)
			require.Eventually(t, func() bool { return wd.Stats().Renewed > before }, 5*time.Second, time.Millisecond)
			require.Equal(t, 30*time.Second, env.Mini.TTL(key))
		}

		other := lock.New(env.Universal, "labeled", lock.WithHolderLabel("pod-8"))
		_, err = other.TryLock(ctx)
		require.ErrorIs(t, err, lock.ErrNotAcquired)
		require.Contains(t, err.Error(), "held by pod-7 for ")
		_, err = other.Lock(ctx, lock.WithWaitTimeout(20*time.Millisecond))
		require.Contains(t, err.Error(), "held by pod-7 for ")
		unlabeled := lock.New(env.Universal, "labeled")
		_, err = unlabeled.TryLock(ctx)
		require.NotContains(t, err.Error(), "held by", "only a labeled contender asks")

		require.NoError(t, mu.Unlock(held))
		require.Equal(t, int64(0), env.Universal.Exists(ctx, key).Val(), "the label goes with the hold")

		per, err := unlabeled.Lock(ctx, lock.WithHolderLabel("job-42")) // per call
		require.NoError(t, err)
		pid, _ := core.Owner(per)
		require.True(t, strings.HasPrefix(env.Universal.Get(ctx, scripts.HolderLabel("labeled", pid)).Val(), "job-42\t"))
		require.NoError(t, unlabeled.Unlock(per))

		for _, bad := range []string{"", "a\tb", strings.Repeat("x", 300)} {
			_, err = lock.New(env.Universal, "labeled", lock.WithHolderLabel(bad)).Lock(ctx)
			require.ErrorIs(t, err, lock.ErrInvalidArgument, "%q", bad)
		}
	})
}

// A labeled hold unlocked out of order (outer first) keeps its label while
// the inner count holds, and the last Unlock deletes it.
func TestHolderLabelOutOfOrder(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		mu := lock.New(env.Universal, "label:ooo", lock.WithHolderLabel("pod-7"))
		outer, err := mu.Lock(ctx)
		require.NoError(t, err)
		inner, err := mu.Lock(outer)
		require.NoError(t, err)
		id, _ := core.Owner(outer)
		key := scripts.HolderLabel("label:ooo", id)
		require.NoError(t, mu.Unlock(outer))
		require.Equal(t, int64(1), env.Universal.Exists(ctx, key).Val(), "the inner count still holds")
		require.NoError(t, mu.Unlock(inner))
		require.Zero(t, env.Universal.Exists(ctx, key).Val(), "the last Unlock deletes the label")
	})
}
