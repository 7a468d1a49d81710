package lock_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/relock-go/relock/internal/telemetry/telemetrytest"
	"github.com/relock-go/relock/internal/testkit/redistest"
	"github.com/relock-go/relock/lock"
	"github.com/relock-go/relock/tracing"
	"github.com/relock-go/relock/watchdog"
)

// eachSingle runs f on miniredis and on a real redis-server.
func eachSingle(t *testing.T, f func(t *testing.T, env *redistest.Env)) {
	for _, b := range redistest.Backends() {
		t.Run(b.Name, func(t *testing.T) { f(t, b.New(t)) })
	}
}

var (
	primLock    = tracing.Primitive.String("lock")
	outAcquired = tracing.Outcome.String(tracing.OutcomeAcquired)
	notAcquired = tracing.Outcome.String(tracing.OutcomeNotAcquired)
	timedOut    = tracing.Outcome.String(tracing.OutcomeTimeout)
	cancelled   = tracing.Outcome.String(tracing.OutcomeCancelled)
)

// contend makes two locks acquired, one Lock that waits out its wait
// timeout on the first, one TryLock that finds it held and one Lock on a
// cancelled context; the holds are released at t.Cleanup.
func contend(t *testing.T, env *redistest.Env, r *telemetrytest.Reader) {
	ctx := ctxT(t)
	opts := []lock.Option{lock.WithMeterProvider(r.Provider), lock.WithWaitTimeout(100 * time.Millisecond)}
	a, b := lock.New(env.U(), "m:a", opts...), lock.New(env.U(), "m:b", opts...)
	ha, err := a.Lock(ctx)
	require.NoError(t, err)
	hb, err := b.Lock(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = a.Unlock(ha); _ = b.Unlock(hb) })
	_, err = a.Lock(ctx) // another owner: waits 100 ms
	require.ErrorIs(t, err, lock.ErrNotAcquired)
	_, err = a.TryLock(ctx)
	require.ErrorIs(t, err, lock.ErrNotAcquired)
	done, cancel := context.WithCancel(ctx)
	cancel()
	_, err = b.Lock(done)
	require.ErrorIs(t, err, context.Canceled)
}

func TestMetricAcquisitions(t *testing.T) {
	eachSingle(t, func(t *testing.T, env *redistest.Env) {
		r := telemetrytest.New(t)
		contend(t, env, r)
		m, ok := r.Metric(t, tracing.MetricAcquisitions)
		require.True(t, ok)
		require.Equal(t, "{acquisition}", m.Unit)
		sum := m.Data.(metricdata.Sum[int64])
		require.True(t, sum.IsMonotonic)
		require.Len(t, sum.DataPoints, 4, "one series per outcome seen")
		for _, dp := range sum.DataPoints {
			require.Equal(t, 2, dp.Attributes.Len(), "primitive and outcome only: %v", dp.Attributes)
			require.True(t, telemetrytest.Has(dp.Attributes, primLock))
		}
		require.EqualValues(t, 2, r.Sum(t, tracing.MetricAcquisitions, primLock, outAcquired))
		require.EqualValues(t, 1, r.Sum(t, tracing.MetricAcquisitions, primLock, timedOut))
		require.EqualValues(t, 1, r.Sum(t, tracing.MetricAcquisitions, primLock, notAcquired))
		require.EqualValues(t, 1, r.Sum(t, tracing.MetricAcquisitions, primLock, cancelled))
	})
}

func TestMetricAcquireDuration(t *testing.T) {
	eachSingle(t, func(t *testing.T, env *redistest.Env) {
		r := telemetrytest.New(t)
		contend(t, env, r)
		m, ok := r.Metric(t, tracing.MetricAcquireDuration)
		require.True(t, ok)
		require.Equal(t, "s", m.Unit)
		h := m.Data.(metricdata.Histogram[float64])
		require.Equal(t, 0.0005, h.DataPoints[0].Bounds[0])
		require.Equal(t, 60.0, h.DataPoints[0].Bounds[len(h.DataPoints[0].Bounds)-1])
		n, s := r.Hist(t, tracing.MetricAcquireDuration, primLock, outAcquired)
		require.EqualValues(t, 2, n)
		require.Less(t, s, 10.0)
		n, s = r.Hist(t, tracing.MetricAcquireDuration, primLock, timedOut)
		require.EqualValues(t, 1, n)
		require.GreaterOrEqual(t, s, 0.1, "the wait timeout was waited out")
		n, _ = r.Hist(t, tracing.MetricAcquireDuration, primLock, notAcquired)
		require.EqualValues(t, 1, n)
	})
}

func TestMetricHeld(t *testing.T) {
	eachSingle(t, func(t *testing.T, env *redistest.Env) {
		r := telemetrytest.New(t)
		ctx := ctxT(t)
		mu := lock.New(env.U(), "m:held", lock.WithMeterProvider(r.Provider))
		held, err := mu.Lock(ctx)
		require.NoError(t, err)
		m, ok := r.Metric(t, tracing.MetricHeld)
		require.True(t, ok)
		require.Equal(t, "{hold}", m.Unit)
		sum := m.Data.(metricdata.Sum[int64])
		require.False(t, sum.IsMonotonic)
		require.Equal(t, 1, sum.DataPoints[0].Attributes.Len())
		require.EqualValues(t, 1, r.Sum(t, tracing.MetricHeld, primLock))
		inner, err := mu.Lock(held)
		require.NoError(t, err)
		require.EqualValues(t, 2, r.Sum(t, tracing.MetricHeld, primLock), "a re-entry is a hold")
		require.NoError(t, mu.Unlock(inner))
		require.EqualValues(t, 1, r.Sum(t, tracing.MetricHeld, primLock))
		require.NoError(t, mu.Unlock(held))
		require.EqualValues(t, 0, r.Sum(t, tracing.MetricHeld, primLock))
	})
}

func TestMetricHoldDuration(t *testing.T) {
	eachSingle(t, func(t *testing.T, env *redistest.Env) {
		r := telemetrytest.New(t)
		ctx := ctxT(t)
		wd := watchdog.New()
		mu := lock.New(env.U(), "m:hold", lock.WithMeterProvider(r.Provider),
			lock.WithWatchdog(wd), lock.WithWatchdogTimeout(300*time.Millisecond))
		ended := func(how string) attribute.KeyValue { return tracing.HoldEnd.String(how) }

		// Released.
		held, err := mu.Lock(ctx)
		require.NoError(t, err)
		time.Sleep(20 * time.Millisecond)
		require.NoError(t, mu.Unlock(held))
		m, ok := r.Metric(t, tracing.MetricHoldDuration)
		require.True(t, ok)
		require.Equal(t, "s", m.Unit)
		n, s := r.Hist(t, tracing.MetricHoldDuration, primLock, ended(tracing.EndReleased))
		require.EqualValues(t, 1, n)
		require.GreaterOrEqual(t, s, 0.02)

		// Abandoned: the acquiring context of a hold scoped to it ends first.
		scoped := lock.New(env.U(), "m:hold", lock.WithMeterProvider(r.Provider),
			lock.WithWatchdog(wd), lock.WithWatchdogTimeout(300*time.Millisecond), lock.WithHoldScopedToContext())
		actx, cancel := context.WithCancel(ctx)
		held, err = scoped.Lock(actx)
		require.NoError(t, err)
		cancel()
		<-held.Done()
		require.Eventually(t, func() bool {
			n, _ := r.Hist(t, tracing.MetricHoldDuration, primLock, ended(tracing.EndAbandoned))
			return n == 1
		}, 5*time.Second, 5*time.Millisecond)
		require.NoError(t, mu.Unlock(held))

		// Lost: the key is deleted, the watchdog's renewal finds it gone.
		held, err = mu.Lock(ctx)
		require.NoError(t, err)
		require.NoError(t, env.U().Del(ctx, "m:hold").Err())
		select {
		case <-held.Done():
		case <-time.After(5 * time.Second):
			t.Fatal("the loss was not noticed")
		}
		require.ErrorIs(t, context.Cause(held), lock.ErrLockLost)
		n, _ = r.Hist(t, tracing.MetricHoldDuration, primLock, ended(tracing.EndLost))
		require.EqualValues(t, 1, n)
		require.ErrorIs(t, mu.Unlock(held), lock.ErrLockLost)
		n, _ = r.Hist(t, tracing.MetricHoldDuration, primLock)
		require.EqualValues(t, 3, n, "each hold ended once")
		require.EqualValues(t, 0, r.Sum(t, tracing.MetricHeld, primLock))
	})
}

func TestMetricLeasesLostAndRenewals(t *testing.T) {
	eachSingle(t, func(t *testing.T, env *redistest.Env) {
		r := telemetrytest.New(t)
		ctx := ctxT(t)
		wd := watchdog.New(watchdog.WithMeterProvider(r.Provider))
		mu := lock.New(env.U(), "m:lost", lock.WithWatchdog(wd), lock.WithWatchdogTimeout(150*time.Millisecond))
		held, err := mu.Lock(ctx)
		require.NoError(t, err)
		require.Eventually(t, func() bool {
			return r.Sum(t, tracing.MetricWatchdogRenewals, primLock) >= 2
		}, 5*time.Second, 5*time.Millisecond, "renewed every 50 ms")
		require.NoError(t, env.U().Del(ctx, "m:lost").Err())
		<-held.Done()
		require.EqualValues(t, 1, r.Sum(t, tracing.MetricWatchdogLeasesLost, primLock))
		require.EqualValues(t, 1, r.Sum(t, tracing.MetricWatchdogRenewalFailures, primLock,
			tracing.FailureReason.String(tracing.ReasonGone)))
		require.ErrorIs(t, mu.Unlock(held), lock.ErrLockLost)
	})
}

func TestMetricNameIsOptIn(t *testing.T) {
	mr, rdb := redistest.Miniredis(t)
	_ = mr
	r := telemetrytest.New(t)
	ctx := ctxT(t)
	for _, mu := range []*lock.Mutex{
		lock.New(rdb, "m:anon", lock.WithMeterProvider(r.Provider)),
		lock.New(rdb, "m:named", lock.WithMeterProvider(r.Provider), lock.WithNameInMetrics()),
	} {
		held, err := mu.Lock(ctx)
		require.NoError(t, err)
		require.NoError(t, mu.Unlock(held))
	}
	require.EqualValues(t, 2, r.Sum(t, tracing.MetricAcquisitions, primLock, outAcquired))
	require.EqualValues(t, 1, r.Sum(t, tracing.MetricAcquisitions, tracing.LockName.String("m:named")))
	require.Zero(t, r.Sum(t, tracing.MetricAcquisitions, tracing.LockName.String("m:anon")))
	n, _ := r.Hist(t, tracing.MetricHoldDuration, tracing.LockName.String("m:named"))
	require.EqualValues(t, 1, n)
}

// spanRecorder returns a tracer provider whose ended spans rec keeps,
// shut down when the test ends.
func spanRecorder(t *testing.T) (rec *tracetest.SpanRecorder, tp *sdktrace.TracerProvider) {
	rec = tracetest.NewSpanRecorder()
	tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return rec, tp
}

func TestReleaseSpan(t *testing.T) {
	eachSingle(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		rec, tp := spanRecorder(t)
		mu := lock.New(env.U(), "m:span", lock.WithTracerProvider(tp))
		held, err := mu.Lock(ctx)
		require.NoError(t, err)
		require.NoError(t, mu.Unlock(held))
		// An abandoned hold's background release is traced too.
		scoped := lock.New(env.U(), "m:span", lock.WithTracerProvider(tp), lock.WithHoldScopedToContext())
		actx, cancel := context.WithCancel(ctx)
		_, err = scoped.Lock(actx)
		require.NoError(t, err)
		cancel()
		require.Eventually(t, func() bool { return len(rec.Ended()) == 4 }, 5*time.Second, 5*time.Millisecond)

		var releases []sdktrace.ReadOnlySpan
		for _, s := range rec.Ended() {
			if s.Name() == tracing.SpanReleaseLock {
				releases = append(releases, s)
			}
		}
		require.Len(t, releases, 2)
		for _, s := range releases {
			a := attrs(s.Attributes())
			require.Equal(t, "m:span", a[tracing.LockName].AsString())
			require.Equal(t, "lock", a[tracing.Primitive].AsString())
			require.Equal(t, tracing.ScopeName, s.InstrumentationScope().Name)
		}
	})
}

// BenchmarkUncontendedLockUnlockSDK is BenchmarkUncontendedLockUnlock with
// an SDK MeterProvider (manual reader) and an SDK TracerProvider that
// samples every span: the cost of metrics and spans when they are on.
func BenchmarkUncontendedLockUnlockSDK(b *testing.B) {
	for _, c := range []struct {
		name           string
		metrics, spans bool
	}{{"metrics", true, false}, {"metrics+spans", true, true}} {
		b.Run(c.name, func(b *testing.B) {
			rdb := benchClient(b)
			ctx := context.Background()
			var opts []lock.Option
			if c.metrics {
				opts = append(opts, lock.WithMeterProvider(telemetrytest.New(b).Provider))
			}
			if c.spans {
				tp := sdktrace.NewTracerProvider() // sampled, no processor
				b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
				opts = append(opts, lock.WithTracerProvider(tp))
			}
			mu := lock.New(rdb, "bench", opts...)
			b.ReportAllocs()
			for b.Loop() {
				held, err := mu.Lock(ctx)
				if err != nil {
					b.Fatal(err)
				}
				if err := mu.Unlock(held); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
