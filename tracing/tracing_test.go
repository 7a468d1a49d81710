package tracing

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestTracerScope(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer tp.Shutdown(context.Background())

	_, span := Tracer(tp).Start(context.Background(), SpanAcquireLock)
	span.End()
	spans := rec.Ended()
	require.Len(t, spans, 1)
	require.Equal(t, SpanAcquireLock, spans[0].Name())
	require.Equal(t, ScopeName, spans[0].InstrumentationScope().Name)
	require.Equal(t, Version, spans[0].InstrumentationScope().Version)
}

func TestTracerGlobalDefault(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer tp.Shutdown(context.Background())
	prev := otel.GetTracerProvider()
	otel.SetTracerProvider(tp)
	defer otel.SetTracerProvider(prev)

	_, span := Tracer(nil).Start(context.Background(), SpanAcquireLock)
	span.End()
	require.Len(t, rec.Ended(), 1)
}
