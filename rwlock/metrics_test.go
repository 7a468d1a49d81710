package rwlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/telemetry/telemetrytest"
	"github.com/relock-go/relock/internal/testkit/redistest"
	"github.com/relock-go/relock/rwlock"
	"github.com/relock-go/relock/tracing"
)

func TestMetricsBySide(t *testing.T) {
	for _, b := range redistest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			env := b.New(t)
			ctx := ctxT(t)
			r := telemetrytest.New(t)
			rw := rwlock.New(env.U(), "m:rw", rwlock.WithMeterProvider(r.Provider), rwlock.WithWaitTimeout(50*time.Millisecond))
			prim := tracing.Primitive.String("rwlock")
			read, write := tracing.Side.String("read"), tracing.Side.String("write")

			rh, err := rw.RLock(ctx)
			require.NoError(t, err)
			require.EqualValues(t, 1, r.Sum(t, tracing.MetricHeld, prim, read))
			_, err = rw.Lock(context.Background()) // another owner: waits 50 ms
			require.ErrorIs(t, err, rwlock.ErrNotAcquired)
			require.NoError(t, rw.RUnlock(rh))
			require.EqualValues(t, 0, r.Sum(t, tracing.MetricHeld, prim, read))

			wh, err := rw.Lock(ctx)
			require.NoError(t, err)
			require.EqualValues(t, 1, r.Sum(t, tracing.MetricHeld, prim, write))
			require.NoError(t, rw.Unlock(wh))

			acq := tracing.Outcome.String(tracing.OutcomeAcquired)
			require.EqualValues(t, 1, r.Sum(t, tracing.MetricAcquisitions, prim, read, acq))
			require.EqualValues(t, 1, r.Sum(t, tracing.MetricAcquisitions, prim, write, acq))
			require.EqualValues(t, 1, r.Sum(t, tracing.MetricAcquisitions, prim, write, tracing.Outcome.String(tracing.OutcomeTimeout)))
			n, _ := r.Hist(t, tracing.MetricAcquireDuration, prim, write)
			require.EqualValues(t, 2, n)
			released := tracing.HoldEnd.String(tracing.EndReleased)
			n, _ = r.Hist(t, tracing.MetricHoldDuration, prim, read, released)
			require.EqualValues(t, 1, n)
			n, _ = r.Hist(t, tracing.MetricHoldDuration, prim, write, released)
			require.EqualValues(t, 1, n)
		})
	}
}
