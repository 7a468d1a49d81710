package watchdog

import (
	"reflect"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/relock-go/relock/internal/clock"
	"github.com/relock-go/relock/internal/lease"
)

// Watchdog renews the leases of held locks; see the package documentation.
// The primitives take one through their WithWatchdog option.
type Watchdog lease.Watchdog

// Default returns the process-wide Watchdog that every primitive uses
// unless given another.
func Default() *Watchdog { return (*Watchdog)(lease.Default()) }

// New returns a Watchdog; most programs use Default.
func New(opts ...Option) *Watchdog { return (*Watchdog)(lease.New(opts...)) }

// Stats counts the watchdog's work since it was made: renewals, pipelines
// and scripts sent, leases lost, failed (retried) renewals, leases tracked.
type Stats = lease.Stats

// Stats returns the counters.
func (w *Watchdog) Stats() Stats { return (*lease.Watchdog)(w).Stats() }

// Option configures a Watchdog made by New.
type Option = lease.Option

// WithClock sets the time source; tests pass a FakeClock. A nil c (or a
// nil pointer in it) keeps the system clock.
func WithClock(c Clock) Option {
	if c == nil {
		return func(*lease.Watchdog) {}
	}
	if v := reflect.ValueOf(c); v.Kind() == reflect.Pointer && v.IsNil() {
		return func(*lease.Watchdog) {}
	}
	return lease.WithClock(c)
}

// WithTick sets the wheel's resolution (default 10 ms). Leases are renewed
// and declared lost at most one tick late, and the loss margin includes it.
func WithTick(d time.Duration) Option { return lease.WithTick(d) }

// WithBatchSize bounds the leases renewed by one script (default 512), so
// that one script never blocks Redis for long.
func WithBatchSize(n int) Option { return lease.WithBatchSize(n) }

// WithMeterProvider sets where the watchdog's metrics go (renewals,
// failures, leases lost); default: the global provider when New runs.
func WithMeterProvider(mp metric.MeterProvider) Option { return lease.WithMeterProvider(mp) }

// WithTracerProvider sets where the span of each renewal pipeline goes
// (default: the global OpenTelemetry provider).
func WithTracerProvider(tp trace.TracerProvider) Option { return lease.WithTracerProvider(tp) }

// Clock is the watchdog's time source (see WithClock): Now, and a Timer
// (part of *time.Timer, plus ResetAt: arm for an instant of this clock).
type Clock = clock.Clock

// Timer is what a Clock's NewTimer returns.
type Timer = clock.Timer

// FakeClock is a manual Clock for tests: time stands still until Advance,
// which fires the timers due, in deadline order; Pending counts armed
// timers, so a test can wait for the code under test to sleep.
type FakeClock = clock.Fake

// NewFakeClock returns a FakeClock set at start.
func NewFakeClock(start time.Time) *FakeClock { return clock.NewFake(start) }
