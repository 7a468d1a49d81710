package semaphore_test

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/semaphore"
)

// A permit's lease or extension past a day is refused, before anything is
// written: its keys would outlive a crashed holder by longer.
func TestLeaseOverADayRefused(t *testing.T) {
	each(t, func(t *testing.T, env *env) {
		ctx := ctxT(t)
		for _, d := range []time.Duration{24*time.Hour + time.Millisecond, math.MaxInt64} {
			_, err := semaphore.New(env.Universal, "day", 2, semaphore.WithLeaseTime(d)).Acquire(ctx, 1)
			require.ErrorIs(t, err, semaphore.ErrInvalidArgument, d.String())
			_, err = semaphore.New(env.Universal, "day", 2).TryAcquire(ctx, 1, semaphore.WithWatchdogTimeout(d))
			require.ErrorIs(t, err, semaphore.ErrInvalidArgument, d.String())
		}
		n, err := env.Universal.DBSize(ctx).Result()
		require.NoError(t, err)
		require.Zero(t, n, "nothing written")

		s := semaphore.New(env.Universal, "day", 2, semaphore.WithLeaseTime(time.Minute))
		held, err := s.Acquire(ctx, 1)
		require.NoError(t, err)
		err = s.Extend(held, math.MaxInt64)
		require.ErrorIs(t, err, semaphore.ErrInvalidArgument)
		require.ErrorContains(t, err, "extend")
		require.ErrorIs(t, s.Extend(held, 24*time.Hour+time.Millisecond), semaphore.ErrInvalidArgument)
		require.NoError(t, s.Release(held))
	})
}
