// Package telemetry holds relock's OpenTelemetry instruments, made once per
// MeterProvider with each primitive's attribute sets precomputed, so that
// recording allocates nothing and costs next to nothing without an SDK.
package telemetry
