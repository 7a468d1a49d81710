// Package tracing names what relock reports to OpenTelemetry: the
// instrumentation scope, the span of each acquire (named in OpenTelemetry's
// low-cardinality "{verb} {object}" manner: "acquire lock", "acquire read
// lock", ...), and the attribute keys and outcome values on it. A primitive
// takes its tracer from a WithTracerProvider option, else from the global
// provider, once, when it is made.
package tracing
