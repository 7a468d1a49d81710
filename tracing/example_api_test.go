package tracing_test

import (
	"context"
	"fmt"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/relock-go/relock/tracing"
)

// Tracer is the tracer every relock primitive starts its spans with: its
// instrumentation scope names relock, so a backend can filter on it. A nil
// provider means the global one.
func ExampleTracer() {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer func() { _ = tp.Shutdown(context.Background()) }()

	_, span := tracing.Tracer(tp).Start(context.Background(), tracing.SpanAcquireSemaphore)
	span.End()
	s := rec.Ended()[0]
	fmt.Println(s.Name())
	fmt.Println(s.InstrumentationScope().Name == tracing.ScopeName, s.InstrumentationScope().Version == tracing.Version)
	// Output:
	// acquire semaphore
	// true true
}
