package lease

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/relock-go/relock/internal/telemetry"
	"github.com/relock-go/relock/internal/telemetry/telemetrytest"
	"github.com/relock-go/relock/internal/testkit/redistest"
	"github.com/relock-go/relock/tracing"
)

var primTest = tracing.Primitive.String("test")

func reason(r string) attribute.KeyValue { return tracing.FailureReason.String(r) }

func TestMetricRenewals(t *testing.T) {
	mr, rdb := redistest.Miniredis(t)
	r := telemetrytest.New(t)
	clk := NewFakeClock(epoch)
	w := New(WithClock(clk), WithMeterProvider(r.Provider))
	l := hold(t, context.Background(), w, rdb, "renewed", 30*time.Second, true)
	defer l.Stop()
	for round := 1; round <= 2; round++ {
		mr.FastForward(10 * time.Second)
		advance(t, clk, 10*time.Second)
		require.Eventually(t, func() bool { return w.Stats().Renewed == int64(round) }, 5*time.Second, time.Millisecond)
	}
	m, ok := r.Metric(t, tracing.MetricWatchdogRenewals)
	require.True(t, ok)
	require.Equal(t, "{renewal}", m.Unit)
	sum := m.Data.(metricdata.Sum[int64])
	require.True(t, sum.IsMonotonic)
	require.Len(t, sum.DataPoints, 1)
	require.Equal(t, attribute.NewSet(primTest), sum.DataPoints[0].Attributes)
	require.EqualValues(t, 2, sum.DataPoints[0].Value)
	require.Zero(t, r.Sum(t, tracing.MetricWatchdogRenewalFailures))
}

func TestMetricRenewalFailuresAndLeasesLost(t *testing.T) {
	mr, rdb := redistest.Miniredis(t)
	r := telemetrytest.New(t)
	clk := NewFakeClock(epoch)
	w := New(WithClock(clk), WithMeterProvider(r.Provider))
	l := hold(t, context.Background(), w, rdb, "failing", 30*time.Second, true)
	var rec lostRecorder
	l.OnLost(&rec)

	// Redis answers with an error: reason "error", retried soon.
	mr.SetError("ERR fake failure")
	advance(t, clk, 10*time.Second)
	require.Eventually(t, func() bool { return w.Stats().Errors == 1 }, 5*time.Second, time.Millisecond)
	m, ok := r.Metric(t, tracing.MetricWatchdogRenewalFailures)
	require.True(t, ok)
	require.Equal(t, "{failure}", m.Unit)
	require.EqualValues(t, 1, r.Sum(t, tracing.MetricWatchdogRenewalFailures, primTest, reason(tracing.ReasonError)))
	mr.SetError("")

	// The key is gone: reason "gone", and the lease is lost.
	mr.Del("failing")
	require.Eventually(t, func() bool {
		if clk.Pending() > 0 {
			clk.Advance(100 * time.Millisecond)
		}
		return rec.n() == 1
	}, 5*time.Second, time.Millisecond)
	require.EqualValues(t, 1, r.Sum(t, tracing.MetricWatchdogRenewalFailures, primTest, reason(tracing.ReasonGone)))
	require.EqualValues(t, 2, r.Sum(t, tracing.MetricWatchdogRenewalFailures, primTest))

	m, ok = r.Metric(t, tracing.MetricWatchdogLeasesLost)
	require.True(t, ok)
	require.Equal(t, "{lease}", m.Unit)
	require.EqualValues(t, 1, r.Sum(t, tracing.MetricWatchdogLeasesLost, primTest))
	l.Stop()
}

// A real redis-server that stalls (CLIENT PAUSE) past the lease: the
// renewal gets no reply in time ("timeout") and the lease is lost; one
// that is down fails with "error".
func TestMetricRenewalFailuresOnRealServer(t *testing.T) {
	srv := redistest.StartServer(t)
	if srv == nil {
		return
	}
	rdb := srv.Client(t, func(o *redis.Options) {
		o.MaxRetries = -1
		o.DialTimeout = 100 * time.Millisecond
		o.ContextTimeoutEnabled = true // the reply timeout is the context's
	})
	admin := srv.Client(t)
	ctx := context.Background()
	r := telemetrytest.New(t)
	w := New(WithMeterProvider(r.Provider))

	const timeout = 300 * time.Millisecond
	l := hold(t, ctx, w, rdb, "paused", timeout, true)
	var rec lostRecorder
	l.OnLost(&rec)
	require.NoError(t, admin.Do(ctx, "CLIENT", "PAUSE", 1000, "ALL").Err())
	require.Eventually(t, func() bool { return rec.n() == 1 }, 5*time.Second, time.Millisecond)
	l.Stop()
	// The pipeline gives up at the loss time (or a little after): its
	// failure is counted then.
	require.Eventually(t, func() bool {
		return r.Sum(t, tracing.MetricWatchdogRenewalFailures, primTest, reason(tracing.ReasonTimeout)) > 0
	}, 5*time.Second, 5*time.Millisecond)
	require.EqualValues(t, 1, r.Sum(t, tracing.MetricWatchdogLeasesLost, primTest))
	require.NoError(t, admin.Do(ctx, "CLIENT", "UNPAUSE").Err())

	before := r.Sum(t, tracing.MetricWatchdogRenewalFailures, primTest)
	l = hold(t, ctx, w, rdb, "down", 3*time.Second, true)
	srv.Kill()
	// Refused connections are "error"; a dial still retrying when the
	// reply timeout ends is "timeout".
	require.Eventually(t, func() bool {
		return r.Sum(t, tracing.MetricWatchdogRenewalFailures, primTest) > before
	}, 5*time.Second, 5*time.Millisecond)
	t.Logf("server down: error %d, timeout %d",
		r.Sum(t, tracing.MetricWatchdogRenewalFailures, primTest, reason(tracing.ReasonError)),
		r.Sum(t, tracing.MetricWatchdogRenewalFailures, primTest, reason(tracing.ReasonTimeout)))
	l.Stop()
}

func TestFailureReason(t *testing.T) {
	require.Equal(t, telemetry.ReplyTimeout, failureReason(context.DeadlineExceeded))
	require.Equal(t, telemetry.ReplyTimeout, failureReason(fmt.Errorf("read: %w", &net.OpError{Op: "read", Err: timeoutErr{}})))
	require.Equal(t, telemetry.Failed, failureReason(errors.New("ERR boom")))
	require.Equal(t, telemetry.Failed, failureReason(&net.OpError{Op: "dial", Err: errors.New("connection refused")}))
}

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

func TestRenewSpan(t *testing.T) {
	mr, rdb := redistest.Miniredis(t)
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	clk := NewFakeClock(epoch)
	w := New(WithClock(clk), WithTracerProvider(tp))
	ctx := context.Background()
	require.NoError(t, rdb.ScriptLoad(ctx, stringRenewer.Lua.Source()).Err())
	a := hold(t, ctx, w, rdb, "a", 30*time.Second, true)
	b := hold(t, ctx, w, rdb, "b", 30*time.Second, true)
	defer a.Stop()
	defer b.Stop()
	mr.Del("b")
	advance(t, clk, 10*time.Second)
	require.Eventually(t, func() bool { return len(rec.Ended()) == 1 }, 5*time.Second, time.Millisecond)
	s := rec.Ended()[0]
	require.Equal(t, tracing.SpanWatchdogRenew, s.Name())
	require.Equal(t, tracing.ScopeName, s.InstrumentationScope().Name)
	got := attribute.NewSet(s.Attributes()...)
	require.True(t, telemetrytest.Has(got,
		tracing.WatchdogLeases.Int(2), tracing.WatchdogRenewed.Int(1),
		tracing.WatchdogGone.Int(1), tracing.WatchdogFailed.Int(0)), "%v", s.Attributes())
	require.Equal(t, codes.Unset, s.Status().Code, "a key gone is the holder's news, not a failed pipeline")

	// A pipeline that fails is an error span.
	mr.SetError("ERR fake failure")
	defer mr.SetError("")
	advance(t, clk, 10*time.Second)
	require.Eventually(t, func() bool { return len(rec.Ended()) == 2 }, 5*time.Second, time.Millisecond)
	s = rec.Ended()[1]
	require.True(t, telemetrytest.Has(attribute.NewSet(s.Attributes()...),
		tracing.WatchdogLeases.Int(1), tracing.WatchdogFailed.Int(1)), "%v", s.Attributes())
	require.Equal(t, codes.Error, s.Status().Code)
}
