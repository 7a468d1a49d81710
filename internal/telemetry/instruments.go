package telemetry

import (
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/relock-go/relock/tracing"
)

// Instruments are what a primitive (or rwlock side) records with, made once by its constructor.
type Instruments struct {
	Tracer    trace.Tracer
	SpanStart []trace.SpanStartOption
	Metrics   *Recorder
	Release   *Release
}

// Setup describes a primitive to NewInstruments.
type Setup struct {
	TracerProvider trace.TracerProvider // nil: the global one
	MeterProvider  metric.MeterProvider // nil: the global one
	NameInMetrics  bool
	Primitive      string
	Side           string // an rwlock's "read" or "write"; "" otherwise
	Name           string
	Renewed        bool   // the watchdog renews its leases
	ReleaseSpan    string // the name of its release spans
	// Attrs are extra acquire span attributes (beyond name, primitive, side, watchdog).
	Attrs []attribute.KeyValue
}

// NewInstruments makes the instruments s describes.
func NewInstruments(s Setup) Instruments {
	attrs := []attribute.KeyValue{tracing.LockName.String(s.Name), tracing.Primitive.String(s.Primitive)}
	if s.Side != "" {
		attrs = append(attrs, tracing.Side.String(s.Side))
	}
	attrs = append(append(attrs, tracing.Watchdog.Bool(s.Renewed)), s.Attrs...)
	in := Instruments{
		Tracer:    tracing.Tracer(s.TracerProvider),
		SpanStart: SpanStart(attrs...),
		Metrics:   For(s.MeterProvider, s.Primitive, s.Side, s.Name, s.NameInMetrics),
	}
	in.Release = &Release{Tracer: in.Tracer, Name: s.ReleaseSpan, Start: in.SpanStart, Metrics: in.Metrics}
	return in
}

// SpanStart returns acquire span start options: client kind and the fixed attributes.
func SpanStart(attrs ...attribute.KeyValue) []trace.SpanStartOption {
	return []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...)}
}
