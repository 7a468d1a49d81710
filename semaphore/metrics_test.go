package semaphore_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/telemetry/telemetrytest"
	"github.com/relock-go/relock/internal/testkit/redistest"
	"github.com/relock-go/relock/semaphore"
	"github.com/relock-go/relock/tracing"
)

func TestMetrics(t *testing.T) {
	for _, b := range redistest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			env := b.New(t)
			ctx := ctxT(t)
			r := telemetrytest.New(t)
			s := semaphore.New(env.U(), "m:sem", 2, semaphore.WithMeterProvider(r.Provider))
			prim := tracing.Primitive.String("semaphore")

			a, err := s.Acquire(ctx, 1)
			require.NoError(t, err)
			b, err := s.Acquire(ctx, 1)
			require.NoError(t, err)
			require.EqualValues(t, 2, r.Sum(t, tracing.MetricHeld, prim))
			_, err = s.TryAcquire(ctx, 1)
			require.ErrorIs(t, err, semaphore.ErrNotAcquired)
			require.NoError(t, s.Release(a))
			require.NoError(t, s.Release(b))
			require.EqualValues(t, 0, r.Sum(t, tracing.MetricHeld, prim))

			require.EqualValues(t, 2, r.Sum(t, tracing.MetricAcquisitions, prim, tracing.Outcome.String(tracing.OutcomeAcquired)))
			require.EqualValues(t, 1, r.Sum(t, tracing.MetricAcquisitions, prim, tracing.Outcome.String(tracing.OutcomeNotAcquired)))
			n, _ := r.Hist(t, tracing.MetricAcquireDuration, prim)
			require.EqualValues(t, 3, n)
			n, _ = r.Hist(t, tracing.MetricHoldDuration, prim, tracing.HoldEnd.String(tracing.EndReleased))
			require.EqualValues(t, 2, n)
		})
	}
}
