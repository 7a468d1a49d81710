package redlock_test

import (
	"context"
	"fmt"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/relock-go/relock/lock"
	"github.com/relock-go/relock/redlock"
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

// threeMasters starts three miniredis masters and returns a "report:9"
// member on each, and a func that closes them.
func threeMasters() ([]redlock.Member, func()) {
	var members []redlock.Member
	var closers []func()
	for range 3 {
		mr, _ := miniredis.Run()
		rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
		members = append(members, lock.New(rdb, "report:9"))
		closers = append(closers, func() { _ = rdb.Close(); mr.Close() })
	}
	return members, func() {
		for _, c := range closers {
			c()
		}
	}
}

// WithMeterProvider records the primitive's metrics with mp instead of
// the global provider; here an SDK with a manual reader shows the
// acquisition counted, without the name (low cardinality by default).
func ExampleWithMeterProvider() {
	members, closeAll := threeMasters()
	defer closeAll()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer func() { _ = mp.Shutdown(context.Background()) }()

	p := redlock.New(members, redlock.WithMeterProvider(mp))
	held, err := p.Lock(context.Background())
	if err != nil {
		fmt.Println(err)
		return
	}
	_ = p.Unlock(held)
	printAcquisitions(reader)
	// Output: relock.acquisitions acquired 1 false
}

// WithNameInMetrics adds the name to the metrics' attributes: one time
// series per name, so only for a bounded set of names.
func ExampleWithNameInMetrics() {
	members, closeAll := threeMasters()
	defer closeAll()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer func() { _ = mp.Shutdown(context.Background()) }()

	p := redlock.New(members, redlock.WithMeterProvider(mp), redlock.WithNameInMetrics())
	held, err := p.Lock(context.Background())
	if err != nil {
		fmt.Println(err)
		return
	}
	_ = p.Unlock(held)
	printAcquisitions(reader)
	// Output: relock.acquisitions acquired 1 true report:9 (3 members)
}
