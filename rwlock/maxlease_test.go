package rwlock_test

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/testkit/redistest"
	"github.com/relock-go/relock/rwlock"
)

// Either side's lease or extension past a day is refused, before anything
// is written: its keys would outlive a crashed holder by longer.
func TestLeaseOverADayRefused(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		for _, d := range []time.Duration{24*time.Hour + time.Millisecond, math.MaxInt64} {
			_, err := rwlock.New(env.Universal, "day", rwlock.WithLeaseTime(d)).RLock(ctx)
			require.ErrorIs(t, err, rwlock.ErrInvalidArgument, d.String())
			_, err = rwlock.New(env.Universal, "day").TryLock(ctx, rwlock.WithWatchdogTimeout(d))
			require.ErrorIs(t, err, rwlock.ErrInvalidArgument, d.String())
		}
		n, err := env.Universal.DBSize(ctx).Result()
		require.NoError(t, err)
		require.Zero(t, n, "nothing written")

		rw := rwlock.New(env.Universal, "day", rwlock.WithLeaseTime(time.Minute))
		r, err := rw.RLock(ctx)
		require.NoError(t, err)
		err = rw.Extend(r, math.MaxInt64)
		require.ErrorIs(t, err, rwlock.ErrInvalidArgument)
		require.ErrorContains(t, err, "extend")
		require.NoError(t, rw.RUnlock(r))
		w, err := rw.Lock(ctx)
		require.NoError(t, err)
		require.ErrorIs(t, rw.Extend(w, 24*time.Hour+time.Millisecond), rwlock.ErrInvalidArgument)
		require.NoError(t, rw.Unlock(w))
	})
}
