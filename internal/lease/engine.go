package lease

import (
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/relock-go/relock/internal/clock"
	"github.com/relock-go/relock/internal/conn"
	"github.com/relock-go/relock/internal/telemetry"
	"github.com/relock-go/relock/tracing"
)

// Clock is the watchdog's time source (see WithClock).
type Clock = clock.Clock

// FakeClock is a manual Clock for tests: it moves only with Advance.
type FakeClock = clock.Fake

// NewFakeClock returns a FakeClock set at start.
func NewFakeClock(start time.Time) *FakeClock { return clock.NewFake(start) }

const (
	defaultTick      = 10 * time.Millisecond
	wheelSlots       = 512
	defaultBatchSize = 512
	// pipelineLeases bounds the leases of one renewal pipeline: a larger
	// round is sent as several pipelines, one after the other, each under
	// its own context deadline.
	pipelineLeases = 2048
	// minReplyTimeout is the least time a renewal pipeline is given for its
	// reply, however close the earliest loss it carries.
	minReplyTimeout = 50 * time.Millisecond
	noDue           = time.Duration(1<<63 - 1)
	// idleLinger keeps the goroutine a moment after the last lease ends,
	// so that a lock taken and released in a loop does not start one each
	// time.
	idleLinger = 100 * time.Millisecond
)

// Option configures a Watchdog made by New.
type Option func(*Watchdog)

// WithClock sets the time source; tests pass a FakeClock.
func WithClock(c Clock) Option { return func(w *Watchdog) { w.clock = c } }

// WithTick sets the wheel's resolution (default 10 ms). Leases are renewed
// and declared lost at most one tick late, and the loss margin includes it.
func WithTick(d time.Duration) Option {
	return func(w *Watchdog) {
		if d > 0 {
			w.tick = d
		}
	}
}

// WithBatchSize bounds the leases renewed by one script (default 512), so
// that one script never blocks Redis for long.
func WithBatchSize(n int) Option {
	return func(w *Watchdog) {
		if n > 0 {
			w.batch = n
		}
	}
}

// WithMeterProvider sets where the watchdog's metrics go (renewals,
// renewal failures, leases lost; default: the global OpenTelemetry
// provider when New runs).
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(w *Watchdog) { w.mp = mp }
}

// WithTracerProvider sets where the span of each renewal pipeline goes
// (default: the global OpenTelemetry provider).
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(w *Watchdog) { w.tp = tp }
}

var (
	defaultOnce sync.Once
	defaultWD   *Watchdog
)

// Default returns the process-wide Watchdog that every primitive uses
// unless given another.
func Default() *Watchdog {
	defaultOnce.Do(func() { defaultWD = New() })
	return defaultWD
}

// Watchdog renews leases; see the package documentation.
type Watchdog struct {
	clock      Clock
	tick       time.Duration
	batch      int
	pipeLeases int       // pipelineLeases (tests lower it)
	base       time.Time // tick 0: ticks count monotonic time from here, never the wall clock

	mu    sync.Mutex
	slots [wheelSlots]map[*Lease]struct{}
	// By when the wheel must turn for the leases of slots[i] (see dueOf),
	// as offsets from base, noDue when none; lower bounds, never late:
	//  - lossDue[i] for the leases placed at their loss time (a round in
	//    flight, a fixed lease, a retry cut at the loss): the earliest of
	//    those times, reset when lossN[i], how many are there, drops to 0
	//    (the leases of a round in flight move away as they are renewed);
	//  - renewDue[i] for the leases placed at a renewal: the entry of a
	//    lease moved away (stopped, retained) stays until the wheel passes
	//    the slot, but lies half the renewal's slack (about a third of the
	//    lease) beyond it, so it hardly brings a handoff forward.
	lossDue  [wheelSlots]time.Duration
	renewDue [wheelSlots]time.Duration
	lossN    [wheelSlots]int32
	cursor   int64 // last tick processed
	count    int   // leases in the wheel
	running  bool
	wakeAt   time.Time // when the goroutine wakes next, on the clock
	kick     chan struct{}
	registry map[regKey]*Lease

	// The wheel's goroutine (generation gen) sends each round's renewals
	// itself. While it waits for their reply (flushing), handoffAt is the
	// instant by which the wheel must turn again; if the reply is not back
	// by then, handoff starts a new wheel goroutine and the old one ends
	// after its round.
	gen       uint64
	flushing  bool
	flushSeq  uint64
	handoffAt time.Time
	handoff   *time.Timer
	// asideQueues holds the renewals queued for a client whose pipeline runs
	// aside (the other masters of a Redlock round): one goroutine per client.
	asideQueues map[conn.Client]*asideQueue

	mp        metric.MeterProvider
	tp        trace.TracerProvider
	metrics   *telemetry.Watchdog
	tracer    trace.Tracer
	spanStart []trace.SpanStartOption

	stats struct {
		renewed, roundTrips, scripts, lost, errors atomic.Int64
		handoffs                                   atomic.Int64 // wheel goroutines started by handOver
		turns                                      atomic.Int64 // wheel turns (advanceLocked calls)
	}
}

type regKey struct {
	client conn.Client
	id     ID
}

// New returns a Watchdog; most programs use Default.
func New(opts ...Option) *Watchdog {
	w := &Watchdog{clock: clock.Real, tick: defaultTick, batch: defaultBatchSize, pipeLeases: pipelineLeases,
		kick: make(chan struct{}, 1), registry: map[regKey]*Lease{}}
	for _, o := range opts {
		o(w)
	}
	for i := range w.slots {
		w.slots[i] = map[*Lease]struct{}{}
		w.lossDue[i], w.renewDue[i] = noDue, noDue
	}
	w.base = w.clock.Now()
	w.cursor = 0
	w.metrics = telemetry.NewWatchdog(w.mp)
	w.tracer = tracing.Tracer(w.tp)
	w.spanStart = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindClient)}
	return w
}

// Now is the watchdog's clock; an acquire reads it just before it sends,
// so the lease is measured from the send time.
func (w *Watchdog) Now() time.Time { return w.clock.Now() }

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
	w.mu.Lock()
	held := len(w.registry)
	w.mu.Unlock()
	return Stats{Renewed: w.stats.renewed.Load(), RoundTrips: w.stats.roundTrips.Load(),
		Scripts: w.stats.scripts.Load(), Lost: w.stats.lost.Load(), Errors: w.stats.errors.Load(), Held: held}
}
