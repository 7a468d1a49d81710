package tracing_test

import (
	"context"
	"fmt"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/relock-go/relock/tracing"
)

func Example() {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	_, span := tracing.Tracer(tp).Start(context.Background(), tracing.SpanAcquireLock)
	span.SetAttributes(tracing.LockName.String("order:1"), tracing.Outcome.String(tracing.OutcomeAcquired))
	span.End()
	fmt.Println(rec.Ended()[0].Name())
	_ = tp.Shutdown(context.Background())
	// Output: acquire lock
}
