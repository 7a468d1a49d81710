// Package tracing names what relock reports to OpenTelemetry: the
// instrumentation scope, the span of each acquire (named in OpenTelemetry's
// low-cardinality "{verb} {object}" manner: "acquire lock", "acquire read
// lock", ...), of each release ("release lock", ...) and of each watchdog
// renewal pipeline ("watchdog renew"), the attribute keys and outcome
// values on them, and the metric instruments' names ("relock.*") and
// attributes. A primitive takes its tracer from a WithTracerProvider
// option, else from the global provider, and its meter from
// WithMeterProvider, else the global one, once, when it is made.
package tracing
