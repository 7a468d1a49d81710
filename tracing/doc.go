// Package tracing names what relock reports to OpenTelemetry: the
// instrumentation scope, the spans of each acquire, release and watchdog
// renewal pipeline (low-cardinality "{verb} {object}" names: "acquire
// lock", "release lock", "watchdog renew"), their attribute keys and
// outcome values, and the metric instruments ("relock.*") and their
// attributes. A primitive takes its tracer and meter from its
// WithTracerProvider and WithMeterProvider options, else from the global
// providers, once, when it is made.
package tracing
