package election

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/relock-go/relock/internal/core"
	"github.com/relock-go/relock/tracing"
)

// instruments are an Election's tracer and metrics.
type instruments struct {
	tracer      trace.Tracer
	leading     metric.Int64UpDownCounter
	transitions metric.Int64Counter
	name        attribute.KeyValue
}

func newInstruments(cfg *core.Config, name string) instruments {
	m := tracing.Meter(cfg.MeterProvider)
	// An instrument that cannot be made is a no-op: metrics never fail an election.
	leading, _ := m.Int64UpDownCounter(tracing.MetricElectionLeading, metric.WithUnit("{leadership}"),
		metric.WithDescription("Leaderships this process holds, by election"))
	transitions, _ := m.Int64Counter(tracing.MetricElectionTransitions, metric.WithUnit("{transition}"),
		metric.WithDescription("Leaderships won and ended by this process, by election and transition"))
	return instruments{tracer: tracing.Tracer(cfg.TracerProvider), leading: leading, transitions: transitions,
		name: tracing.LockName.String(name)}
}

// transition records a leadership won (delta 1) or ended (-1); how is
// tracing's TransitionElected, TransitionResigned or TransitionLost.
func (in instruments) transition(ctx context.Context, how string, delta int64) {
	if in.leading == nil {
		return
	}
	in.leading.Add(ctx, delta, metric.WithAttributes(in.name))
	in.transitions.Add(ctx, 1, metric.WithAttributes(in.name, tracing.ElectionTransition.String(how)))
}
