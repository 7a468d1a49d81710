// Package telemetry holds relock's OpenTelemetry instruments: made once per
// MeterProvider, with the attribute sets of each primitive precomputed, so
// that recording allocates nothing and costs next to nothing when no SDK is
// installed (the global provider's instruments are then disabled).
package telemetry
