package watchdog

import (
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/relock-go/relock/internal/lease"
)

// The renewal engine lives in internal/lease, which the primitives share;
// this package is what a user configures of it. The names below are that
// engine's, so a *Watchdog made here is the one a primitive renews with.

// Clock is the watchdog's time source (see WithClock).
type Clock = lease.Clock

// FakeClock is a manual Clock for tests: it moves only with Advance.
type FakeClock = lease.FakeClock

// NewFakeClock returns a FakeClock set at start.
func NewFakeClock(start time.Time) *FakeClock { return lease.NewFakeClock(start) }

// Option configures a Watchdog made by New.
type Option = lease.Option

// WithClock sets the time source; tests pass a FakeClock.
func WithClock(c Clock) Option { return lease.WithClock(c) }

// WithTick sets the wheel's resolution (default 10 ms). Leases are renewed
// and declared lost at most one tick late, and the loss margin includes it.
func WithTick(d time.Duration) Option { return lease.WithTick(d) }

// WithBatchSize bounds the leases renewed by one script (default 512), so
// that one script never blocks Redis for long.
func WithBatchSize(n int) Option { return lease.WithBatchSize(n) }

// WithMeterProvider sets where the watchdog's metrics go (renewals,
// renewal failures, leases lost; default: the global OpenTelemetry
// provider when New runs).
func WithMeterProvider(mp metric.MeterProvider) Option { return lease.WithMeterProvider(mp) }

// WithTracerProvider sets where the span of each renewal pipeline goes
// (default: the global OpenTelemetry provider).
func WithTracerProvider(tp trace.TracerProvider) Option { return lease.WithTracerProvider(tp) }

// Default returns the process-wide Watchdog that every primitive uses
// unless given another.
func Default() *Watchdog { return lease.Default() }

// New returns a Watchdog; most programs use Default.
func New(opts ...Option) *Watchdog { return lease.New(opts...) }

// Watchdog renews leases; see the package documentation.
type Watchdog = lease.Watchdog

// Stats counts the watchdog's work since it was made.
type Stats = lease.Stats

// Kind is how one primitive renews its leases: a script that renews a
// batch of leases of one cluster slot.
type Kind = lease.Kind

// Target is one key set of a lease on one Redis client; a Redlock lease
// has one target per master.
type Target = lease.Target

// Spec describes a lease to keep.
type Spec = lease.Spec

// Lease is one held lock's lease, as the watchdog tracks it.
type Lease = lease.Lease
