package semaphore_test

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/telemetry/telemetrytest"
	"github.com/relock-go/relock/internal/testkit/redistest"
	"github.com/relock-go/relock/semaphore"
	"github.com/relock-go/relock/tracing"
	"github.com/relock-go/relock/watchdog"
)

// TestGrantLapsedOnArrivalRefused: permits whose grant comes back after
// their lease has lapsed (the watchdog's clock moved past the lease
// between the script's run and its reply) may already count for another
// holder, so Acquire refuses them with ErrLockLost and gives them back at
// once.
func TestGrantLapsedOnArrivalRefused(t *testing.T) {
	each(t, func(t *testing.T, env *env) {
		ctx := ctxT(t)
		const name = "lapsed-grant"
		require.NoError(t, redis.NewScript(semaphore.AcquireScriptSource()).Load(ctx, env.Universal).Err())
		clk := redistest.FakeClock(t)
		wd := watchdog.New(watchdog.WithClock(clk))
		c := env.NewClient(t)
		hook := redistest.NewScriptFaults(semaphore.AcquireScriptSource())
		c.AddHook(hook)
		metrics := telemetrytest.New(t)
		s := semaphore.New(c, name, 3, semaphore.WithWatchdog(wd), semaphore.WithMeterProvider(metrics.Provider))
		hook.AfterNext(func() { clk.Advance(time.Minute) }) // past the 30 s lease
		_, err := s.Acquire(ctx, 2)
		require.ErrorIs(t, err, semaphore.ErrLockLost)
		require.ErrorContains(t, err, `"`+name+`"`)
		require.ErrorContains(t, err, "lapsed before the grant's reply arrived")
		require.Equal(t, int32(1), hook.Seen.Load(), "refused without a second try")
		require.EqualValues(t, 3, available(t, s), "given back")
		require.Zero(t, wd.Stats().Held, "the watchdog keeps nothing")
		// Recorded as the failure the caller got, not as acquired.
		require.EqualValues(t, 1, metrics.Sum(t, tracing.MetricAcquisitions, tracing.Outcome.String(tracing.OutcomeError)))
		require.Zero(t, metrics.Sum(t, tracing.MetricAcquisitions, tracing.Outcome.String(tracing.OutcomeAcquired)))

		held, err := s.TryAcquire(ctx, 3)
		require.NoError(t, err, "every permit free for the next holder")
		require.NoError(t, s.Release(held))
	})
}
