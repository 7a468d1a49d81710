package tracing_test

import (
	"context"
	"fmt"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/relock-go/relock/tracing"
)

// Meter returns relock's meter from mp (the global provider when nil):
// instruments made on it carry relock's instrumentation scope.
func ExampleMeter() {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer func() { _ = mp.Shutdown(context.Background()) }()

	counter, _ := tracing.Meter(mp).Int64Counter("example.calls")
	counter.Add(context.Background(), 1)

	var rm metricdata.ResourceMetrics
	_ = reader.Collect(context.Background(), &rm)
	fmt.Println(rm.ScopeMetrics[0].Scope.Name, rm.ScopeMetrics[0].Metrics[0].Name)
	// Output: github.com/relock-go/relock example.calls
}
