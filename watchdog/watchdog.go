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
// The primitives take one through their WithWatchdog option; its engine
// (internal/lease) is the same value, so a Watchdog made here is the one
// they renew with.
type Watchdog lease.Watchdog

// Default returns the process-wide Watchdog that every primitive uses
// unless given another.
func Default() *Watchdog { return (*Watchdog)(lease.Default()) }

// New returns a Watchdog; most programs use Default.
func New(opts ...Option) *Watchdog {
	set := make([]lease.Option, 0, len(opts))
	for _, o := range opts {
		if o.set != nil {
			set = append(set, o.set)
		}
	}
	return (*Watchdog)(lease.New(set...))
}

// Stats counts the watchdog's work since it was made.
type Stats struct {
	Renewed    int64 // lease renewals that succeeded
	RoundTrips int64 // pipelines sent (per client, or cluster master, and round; one per 2048 leases)
	Scripts    int64 // renewal scripts sent
	Lost       int64 // leases declared lost
	Errors     int64 // renewals that failed with an error (and were retried)
	Held       int   // leases tracked now
}

// Stats returns the counters.
func (w *Watchdog) Stats() Stats {
	s := (*lease.Watchdog)(w).Stats()
	return Stats{Renewed: s.Renewed, RoundTrips: s.RoundTrips, Scripts: s.Scripts,
		Lost: s.Lost, Errors: s.Errors, Held: s.Held}
}

// Option configures a Watchdog made by New.
type Option struct{ set lease.Option }

// WithClock sets the time source; tests pass a FakeClock. A nil c (or a
// nil pointer in it) keeps the system clock.
func WithClock(c Clock) Option {
	if c == nil {
		return Option{}
	}
	if v := reflect.ValueOf(c); v.Kind() == reflect.Pointer && v.IsNil() {
		return Option{}
	}
	switch c := c.(type) {
	case *FakeClock:
		return Option{lease.WithClock(c.fake)}
	default:
		return Option{lease.WithClock(userClock{c})}
	}
}

// WithTick sets the wheel's resolution (default 10 ms). Leases are renewed
// and declared lost at most one tick late, and the loss margin includes it.
func WithTick(d time.Duration) Option { return Option{lease.WithTick(d)} }

// WithBatchSize bounds the leases renewed by one script (default 512), so
// that one script never blocks Redis for long.
func WithBatchSize(n int) Option { return Option{lease.WithBatchSize(n)} }

// WithMeterProvider sets where the watchdog's metrics go (renewals,
// renewal failures, leases lost; default: the global OpenTelemetry
// provider when New runs).
func WithMeterProvider(mp metric.MeterProvider) Option {
	return Option{lease.WithMeterProvider(mp)}
}

// WithTracerProvider sets where the span of each renewal pipeline goes
// (default: the global OpenTelemetry provider).
func WithTracerProvider(tp trace.TracerProvider) Option {
	return Option{lease.WithTracerProvider(tp)}
}

// Clock is the watchdog's time source (see WithClock): the wheel reads
// Now and sleeps on a Timer.
type Clock interface {
	Now() time.Time
	NewTimer(d time.Duration) Timer
}

// Timer is the part of *time.Timer the watchdog uses.
type Timer interface {
	C() <-chan time.Time
	Stop() bool
	Reset(d time.Duration)
	// ResetAt arms the timer for the instant at, read from the same
	// clock: unlike Reset, it cannot lose time that passed between
	// reading Now and arming.
	ResetAt(at time.Time)
}

// userClock gives a user's Clock the engine's method set (its NewTimer
// returns the engine's Timer type).
type userClock struct{ c Clock }

func (u userClock) Now() time.Time                       { return u.c.Now() }
func (u userClock) NewTimer(d time.Duration) clock.Timer { return u.c.NewTimer(d) }

// FakeClock is a manual Clock for tests: time stands still until Advance.
type FakeClock struct{ fake *clock.Fake }

// NewFakeClock returns a FakeClock set at start.
func NewFakeClock(start time.Time) *FakeClock { return &FakeClock{clock.NewFake(start)} }

// Now returns the fake time.
func (f *FakeClock) Now() time.Time { return f.fake.Now() }

// NewTimer returns a timer that fires when the clock is advanced past d.
func (f *FakeClock) NewTimer(d time.Duration) Timer { return f.fake.NewTimer(d) }

// Advance moves the clock by d and fires every timer that falls due, in
// deadline order.
func (f *FakeClock) Advance(d time.Duration) { f.fake.Advance(d) }

// Pending is the number of armed timers, so a test can wait until the code
// under test is asleep before it advances the clock.
func (f *FakeClock) Pending() int { return f.fake.Pending() }
