package rwlock_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/telemetry/telemetrytest"
	"github.com/relock-go/relock/internal/testkit/redistest"
	"github.com/relock-go/relock/rwlock"
	"github.com/relock-go/relock/tracing"
	"github.com/relock-go/relock/watchdog"
)

// TestGrantLapsedOnArrivalRefused: a read or write grant whose reply
// comes after its lease has lapsed (the watchdog's clock moved past the
// lease between the script's run and its reply) may overlap a writer's
// hold, so the call refuses it with ErrLockLost and gives it back at once.
func TestGrantLapsedOnArrivalRefused(t *testing.T) {
	sides := []struct {
		name string
		lock func(rw *rwlock.RWMutex, ctx context.Context) (context.Context, error)
	}{
		{"read", func(rw *rwlock.RWMutex, ctx context.Context) (context.Context, error) { return rw.RLock(ctx) }},
		{"write", func(rw *rwlock.RWMutex, ctx context.Context) (context.Context, error) { return rw.Lock(ctx) }},
	}
	each(t, func(t *testing.T, env *redistest.Env) {
		for _, s := range sides {
			ctx := ctxT(t)
			name := "lapsed:" + s.name
			for _, src := range rwlock.AcquireScriptSources() {
				require.NoError(t, redis.NewScript(src).Load(ctx, env.Universal).Err())
			}
			clk := redistest.FakeClock(t)
			wd := watchdog.New(watchdog.WithClock(clk))
			c := env.NewClient(t)
			hook := redistest.NewScriptFaults(rwlock.AcquireScriptSources()...)
			c.AddHook(hook)
			metrics := telemetrytest.New(t)
			rw := rwlock.New(c, name, rwlock.WithWatchdog(wd), rwlock.WithMeterProvider(metrics.Provider))
			hook.AfterNext(func() { clk.Advance(time.Minute) }) // past the 30 s lease
			_, err := s.lock(rw, as(ctx, "late"))
			require.ErrorIs(t, err, rwlock.ErrLockLost, s.name)
			require.ErrorContains(t, err, fmt.Sprintf("%q", name))
			require.ErrorContains(t, err, "lapsed before the grant's reply arrived")
			require.Equal(t, int32(1), hook.Seen.Load(), "%s: refused without a second try", s.name)
			require.Zero(t, env.Universal.Exists(ctx, name).Val(), "%s: given back", s.name)
			require.Zero(t, wd.Stats().Held, "%s: the watchdog keeps nothing", s.name)
			// Recorded as the failure the caller got, not as acquired.
			require.EqualValues(t, 1, metrics.Sum(t, tracing.MetricAcquisitions, tracing.Outcome.String(tracing.OutcomeError)), s.name)
			require.Zero(t, metrics.Sum(t, tracing.MetricAcquisitions, tracing.Outcome.String(tracing.OutcomeAcquired)), s.name)

			held, err := rw.TryLock(as(ctx, "next"))
			require.NoError(t, err, "%s: a writer may take it at once", s.name)
			require.NoError(t, rw.Unlock(held))
		}
	})
}
