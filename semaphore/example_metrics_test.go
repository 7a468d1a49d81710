package semaphore_test

import (
	"context"
	"fmt"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/relock-go/relock/semaphore"
	"github.com/relock-go/relock/tracing"
)

// printAcquisitions prints the acquisitions counter's data points that a
// manual reader collected: outcome, whether the name is there, count.
func printAcquisitions(reader *sdkmetric.ManualReader) {
	var rm metricdata.ResourceMetrics
	_ = reader.Collect(context.Background(), &rm)
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			sum, ok := m.Data.(metricdata.Sum[int64])
			if !ok || m.Name != tracing.MetricAcquisitions {
				continue
			}
			for _, dp := range sum.DataPoints {
				outcome, _ := dp.Attributes.Value(tracing.Outcome)
				name, named := dp.Attributes.Value(tracing.LockName)
				fmt.Println(m.Name, outcome.AsString(), dp.Value, named, name.AsString())
			}
		}
	}
}

// WithMeterProvider records the primitive's metrics with mp instead of
// the global provider; here an SDK with a manual reader shows the
// acquisition counted, without the name (low cardinality by default).
func ExampleWithMeterProvider() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer func() { _ = mp.Shutdown(context.Background()) }()

	p := semaphore.New(rdb, "report:9", 2, semaphore.WithMeterProvider(mp))
	held, err := p.Acquire(context.Background(), 1)
	if err != nil {
		fmt.Println(err)
		return
	}
	_ = p.Release(held)
	printAcquisitions(reader)
	// Output: relock.acquisitions acquired 1 false
}

// WithNameInMetrics adds the name to the metrics' attributes: one time
// series per name, so only for a bounded set of names.
func ExampleWithNameInMetrics() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer func() { _ = mp.Shutdown(context.Background()) }()

	p := semaphore.New(rdb, "report:9", 2, semaphore.WithMeterProvider(mp), semaphore.WithNameInMetrics())
	held, err := p.Acquire(context.Background(), 1)
	if err != nil {
		fmt.Println(err)
		return
	}
	_ = p.Release(held)
	printAcquisitions(reader)
	// Output: relock.acquisitions acquired 1 true report:9
}
