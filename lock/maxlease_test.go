package lock_test

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/testkit/redistest"
	"github.com/relock-go/relock/lock"
)

// Nothing a lock writes may outlive its last use by more than 24 h, so a
// lease or an extension past that is refused before anything is written.
func TestLeaseOverADayRefused(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		for name, d := range map[string]time.Duration{"a day and a ms": 24*time.Hour + time.Millisecond, "MaxInt64": math.MaxInt64} {
			for opt, o := range map[string]lock.CommonOption{"lease": lock.WithLeaseTime(d), "watchdog": lock.WithWatchdogTimeout(d)} {
				_, err := lock.New(env.Universal, "day", o).Lock(ctx)
				require.ErrorIs(t, err, lock.ErrInvalidArgument, name+" "+opt)
				require.ErrorContains(t, err, "24h", name+" "+opt)
				_, err = lock.New(env.Universal, "day").TryLock(ctx, o)
				require.ErrorIs(t, err, lock.ErrInvalidArgument, name+" "+opt+" for one acquisition")
			}
		}
		n, err := env.Universal.DBSize(ctx).Result()
		require.NoError(t, err)
		require.Zero(t, n, "nothing written")

		mu := lock.New(env.Universal, "day", lock.WithLeaseTime(time.Minute))
		held, err := mu.Lock(ctx)
		require.NoError(t, err)
		for _, d := range []time.Duration{24*time.Hour + time.Millisecond, math.MaxInt64} {
			err = mu.Extend(held, d)
			require.ErrorIs(t, err, lock.ErrInvalidArgument, d.String())
			require.ErrorContains(t, err, "extend", d.String())
		}
		require.NoError(t, mu.Extend(held, 24*time.Hour), "a day is the bound, allowed")
		ttl, err := mu.TTL(ctx)
		require.NoError(t, err)
		require.Greater(t, ttl, 23*time.Hour)
		require.NoError(t, mu.Unlock(held))
	})
}
