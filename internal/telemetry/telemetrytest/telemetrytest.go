// Package telemetrytest reads what relock's instruments recorded, for tests.
package telemetrytest

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/relock-go/relock/tracing"
)

// Reader is a MeterProvider with a manual reader.
type Reader struct {
	// Provider is the MeterProvider to give the primitives.
	Provider *sdkmetric.MeterProvider
	reader   *sdkmetric.ManualReader
}

// New returns a Reader, shut down at t.Cleanup.
func New(t testing.TB) *Reader {
	r := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	return &Reader{Provider: mp, reader: r}
}

// Metric collects relock's instrument called name, and whether it was recorded.
func (r *Reader) Metric(t testing.TB, name string) (metricdata.Metrics, bool) {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatalf("collect: %v", err)
	}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != tracing.ScopeName {
			continue
		}
		for _, m := range sm.Metrics {
			if m.Name == name {
				return m, true
			}
		}
	}
	return metricdata.Metrics{}, false
}

// Has reports whether set has every one of kvs.
func Has(set attribute.Set, kvs ...attribute.KeyValue) bool {
	for _, kv := range kvs {
		if v, ok := set.Value(kv.Key); !ok || v != kv.Value {
			return false
		}
	}
	return true
}

// Sum adds up name's int64 sum points having every one of kvs (0 when none).
func (r *Reader) Sum(t testing.TB, name string, kvs ...attribute.KeyValue) int64 {
	t.Helper()
	m, ok := r.Metric(t, name)
	if !ok {
		return 0
	}
	s, ok := m.Data.(metricdata.Sum[int64])
	if !ok {
		t.Fatalf("%s is a %T, not an int64 sum", name, m.Data)
	}
	var n int64
	for _, dp := range s.DataPoints {
		if Has(dp.Attributes, kvs...) {
			n += dp.Value
		}
	}
	return n
}

// Hist returns the count and sum of name's float64 histogram points with all of kvs.
func (r *Reader) Hist(t testing.TB, name string, kvs ...attribute.KeyValue) (count uint64, sum float64) {
	t.Helper()
	m, ok := r.Metric(t, name)
	if !ok {
		return 0, 0
	}
	h, ok := m.Data.(metricdata.Histogram[float64])
	if !ok {
		t.Fatalf("%s is a %T, not a float64 histogram", name, m.Data)
	}
	for _, dp := range h.DataPoints {
		if Has(dp.Attributes, kvs...) {
			count += dp.Count
			sum += dp.Sum
		}
	}
	return count, sum
}

// IntHist returns name's int64 histogram points that have every one of kvs.
func (r *Reader) IntHist(t testing.TB, name string, kvs ...attribute.KeyValue) []metricdata.HistogramDataPoint[int64] {
	t.Helper()
	m, ok := r.Metric(t, name)
	if !ok {
		return nil
	}
	h, ok := m.Data.(metricdata.Histogram[int64])
	if !ok {
		t.Fatalf("%s is a %T, not an int64 histogram", name, m.Data)
	}
	var out []metricdata.HistogramDataPoint[int64]
	for _, dp := range h.DataPoints {
		if Has(dp.Attributes, kvs...) {
			out = append(out, dp)
		}
	}
	return out
}
