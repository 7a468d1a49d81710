package semaphore_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/scripts"
	"github.com/relock-go/relock/internal/testkit/redistest"
	"github.com/relock-go/relock/semaphore"
)

// TestAcquireRunAgainRenewsPermit: go-redis sends the acquire script again
// a read timeout after the first run, whose reply it lost, and the second
// run finds the permit the first took. The caller measures the permit's
// lease from a send it knows of, so the second run renews the permit's
// expiry in Redis: left at the first run's, the permit would lapse there
// before its holder is told, and another could take it (a seeded fault
// run saw 4 permits of 3 held so).
func TestAcquireRunAgainRenewsPermit(t *testing.T) {
	each(t, func(t *testing.T, env *env) {
		ctx := ctxT(t)
		const name, lease, gap = "again", 2 * time.Second, 600 * time.Millisecond
		c := env.NewClient(t)
		hook := redistest.NewScriptFaults(semaphore.AcquireScriptSource())
		hook.Twice, hook.Gap = true, gap
		c.AddHook(hook)
		s := semaphore.New(c, name, 3, semaphore.WithLeaseTime(lease))
		held, err := s.Acquire(ctx, 2)
		require.NoError(t, err)
		require.Positive(t, hook.Seen.Load(), "the acquisition went through the hook")
		permits := env.Universal.ZRangeWithScores(ctx, scripts.Permits(name), 0, -1).Val()
		require.Len(t, permits, 1)
		now := env.Universal.Time(ctx).Val()
		left := time.Duration(int64(permits[0].Score)-now.UnixMilli()) * time.Millisecond
		require.Greater(t, left, lease-gap/2, "the second run renews the permit's expiry")
		require.NoError(t, s.Release(held))
	})
}
