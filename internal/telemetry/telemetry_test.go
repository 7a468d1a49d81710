package telemetry

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/metric/noop"
	"go.uber.org/goleak"

	"github.com/relock-go/relock/internal/telemetry/telemetrytest"
	"github.com/relock-go/relock/tracing"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestRecordersAreShared(t *testing.T) {
	r := telemetrytest.New(t)
	a := For(r.Provider, "lock", "", "a", false)
	require.Same(t, a, For(r.Provider, "lock", "", "b", false), "no name: one Recorder per primitive")
	require.NotSame(t, a, For(r.Provider, "rwlock", "read", "a", false))
	require.Same(t, a.in, For(r.Provider, "lock", "", "a", true).in, "instruments made once per provider")
	require.NotSame(t, a, For(r.Provider, "lock", "", "a", true), "a named Recorder is the primitive's own")
}

func TestGlobalNoopCostsNothing(t *testing.T) {
	ctx := context.Background()
	for _, r := range []*Recorder{For(nil, "lock", "", "x", false), For(noop.NewMeterProvider(), "lock", "", "x", false)} {
		require.False(t, r.AcquireEnabled(ctx), "no SDK: nothing to measure")
		require.False(t, r.HoldStart(ctx))
		require.Zero(t, testing.AllocsPerRun(100, func() {
			r.Acquire(ctx, Acquired, time.Millisecond)
			r.HoldEnd(ctx, Released, time.Millisecond)
		}))
	}
	var nilRec *Recorder
	require.False(t, nilRec.AcquireEnabled(ctx))
	require.False(t, nilRec.HoldStart(ctx))
}

func TestSDKRecordingAllocatesLittle(t *testing.T) {
	r := telemetrytest.New(t)
	rec := For(r.Provider, "lock", "", "x", false)
	ctx := context.Background()
	require.True(t, rec.AcquireEnabled(ctx))
	rec.Acquire(ctx, Timeout, time.Millisecond) // the series exist before measuring (AllocsPerRun runs f once more)
	require.True(t, rec.HoldStart(ctx))
	rec.HoldEnd(ctx, Lost, time.Millisecond)
	allocs := testing.AllocsPerRun(100, func() {
		rec.Acquire(ctx, Timeout, time.Millisecond)
		rec.HoldStart(ctx)
		rec.HoldEnd(ctx, Lost, time.Millisecond)
	})
	t.Logf("allocs per acquire+hold recorded: %v", allocs)
	require.LessOrEqual(t, allocs, 4.0)
	require.EqualValues(t, 102, r.Sum(t, tracing.MetricAcquisitions, tracing.Outcome.String(tracing.OutcomeTimeout)))
}
