package telemetry

import (
	"context"

	"go.opentelemetry.io/otel/metric"

	"github.com/relock-go/relock/tracing"
)

// ServerWarning counts one warning about a Redis server's settings
// (tracing.MetricServerWarnings) on mp, or on the global provider when mp
// is nil. Warnings come once per server and reason, so the counter is
// looked up on each: nothing is cached for so rare a call.
func ServerWarning(ctx context.Context, mp metric.MeterProvider, addr, reason string) {
	c, err := tracing.Meter(mp).Int64Counter(tracing.MetricServerWarnings, metric.WithUnit("{warning}"),
		metric.WithDescription("Redis server settings found to weaken a guarantee, once per server and reason."))
	if err != nil {
		return
	}
	c.Add(ctx, 1, metric.WithAttributes(tracing.WarningReason.String(reason), tracing.ServerAddress.String(addr)))
}
