package watchdog_test

import (
	"context"
	"fmt"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/relock-go/relock/lock"
	"github.com/relock-go/relock/tracing"
	"github.com/relock-go/relock/watchdog"
)

// WithMeterProvider records the watchdog's renewals, renewal failures and
// lost leases with mp instead of the global provider. Here one renewal of
// a held lock is counted (a fake clock moves the watchdog).
func ExampleWithMeterProvider() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer func() { _ = mp.Shutdown(context.Background()) }()

	clk := watchdog.NewFakeClock(time.Unix(0, 0))
	wd := watchdog.New(watchdog.WithClock(clk), watchdog.WithMeterProvider(mp))
	mu := lock.New(rdb, "report", lock.WithWatchdog(wd))
	held, _ := mu.Lock(context.Background())
	for clk.Pending() == 0 {
		time.Sleep(time.Millisecond)
	}
	clk.Advance(10 * time.Second) // a third of the 30 s lease: renew
	for wd.Stats().Renewed == 0 {
		time.Sleep(time.Millisecond)
	}
	_ = mu.Unlock(held)

	var rm metricdata.ResourceMetrics
	_ = reader.Collect(context.Background(), &rm)
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if sum, ok := m.Data.(metricdata.Sum[int64]); ok && m.Name == tracing.MetricWatchdogRenewals {
				for _, dp := range sum.DataPoints {
					primitive, _ := dp.Attributes.Value(tracing.Primitive)
					fmt.Println(m.Name, primitive.AsString(), dp.Value)
				}
			}
		}
	}
	// Output: relock.watchdog.renewals lock 1
}
