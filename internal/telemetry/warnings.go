package telemetry

import (
	"context"

	"go.opentelemetry.io/otel/metric"

	"github.com/relock-go/relock/tracing"
)

// ServerWarning counts a warning about a Redis server's settings
// (tracing.MetricServerWarnings) on mp (nil: global); too rare to cache.
func ServerWarning(ctx context.Context, mp metric.MeterProvider, addr, reason string) {
	c, err := tracing.Meter(mp).Int64Counter(tracing.MetricServerWarnings, metric.WithUnit("{warning}"),
		metric.WithDescription("Redis server settings found to weaken a guarantee, once per server and reason."))
	if err != nil {
		return
	}
	c.Add(ctx, 1, metric.WithAttributes(tracing.WarningReason.String(reason), tracing.ServerAddress.String(addr)))
}
