package semaphore_test

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/scripts"
	"github.com/relock-go/relock/semaphore"
)

// TestLateHandOffToAWaiterThatHoldsItsPermit: a release offers its permit
// to a local waiter, but its script runs late (a stalled connection, a
// resend after a lost reply): the waiter has meanwhile taken the same
// permit id with a try of its own. The hand-off must serve it without
// counting its permits a second time, which would shrink the semaphore
// for good.
func TestLateHandOffToAWaiterThatHoldsItsPermit(t *testing.T) {
	each(t, func(t *testing.T, env *env) {
		ctx := ctxT(t)
		const name, size, lease = "late-handoff", 3, 10 * time.Second
		s := semaphore.New(env.Universal, name, size, semaphore.WithLeaseTime(lease))
		require.Equal(t, []int64{1, 2}, acquireScript(t, ctx, env, s, name, size, 1, "holder", lease))
		require.Equal(t, []int64{1, 1}, acquireScript(t, ctx, env, s, name, size, 1, "waiter", lease), "the waiter's own try")

		env.advance(50 * time.Millisecond) // the release runs later than the waiter's try
		sentAt := serverMillis(t, ctx, env.Universal)
		ks := []string{name, scripts.Permits(name), scripts.Weights(name), s.Channel(),
			"redisson_unlock_latch:{" + name + "}:late", scripts.Waiters(name), scripts.WaiterExpiry(name)}
		got, err := redis.NewScript(semaphore.ReleaseScriptSource()).Run(ctx, env.Universal, ks,
			"holder", "publish", 3000, "waiter", 1, lease.Milliseconds()).Int64Slice()
		require.NoError(t, err)
		require.Equal(t, []int64{1, 1, 2}, got, "released; the waiter holds its permit; two are free")
		// The waiter measures its lease from the hand-off: Redis must not
		// end the permit before.
		ends, err := env.Universal.ZScore(ctx, scripts.Permits(name), "waiter").Result()
		require.NoError(t, err)
		require.GreaterOrEqual(t, int64(ends), sentAt+lease.Milliseconds(), "the permit's lease runs from the hand-off")

		free, err := s.Available(ctx)
		require.NoError(t, err)
		require.EqualValues(t, 2, free, "the waiter's permit counts once")
		held, err := s.TryAcquire(ctx, 2)
		require.NoError(t, err, "two permits are free")
		require.NoError(t, s.Release(held))
	})
}
