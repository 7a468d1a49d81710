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
	// pipelineLeases caps one pipeline's leases; each further one has its own deadline.
	pipelineLeases = 2048
	// minReplyTimeout is the least time a renewal pipeline waits for its reply.
	minReplyTimeout = 50 * time.Millisecond
	noDue           = time.Duration(1<<63 - 1)
	// idleLinger keeps the goroutine briefly after the last lease, so a lock/unlock loop reuses it.
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

// WithBatchSize bounds the leases per script (default 512) so none blocks Redis long.
func WithBatchSize(n int) Option {
	return func(w *Watchdog) {
		if n > 0 {
			w.batch = n
		}
	}
}

// WithMeterProvider sets where metrics go (default: the global provider when New runs).
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(w *Watchdog) { w.mp = mp }
}

// WithTracerProvider sets where renewal pipeline spans go (default: global).
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(w *Watchdog) { w.tp = tp }
}

var defaultWD = sync.OnceValue(func() *Watchdog { return New() })

// Default returns the process-wide Watchdog primitives use unless given another.
func Default() *Watchdog { return defaultWD() }

// Watchdog renews leases; see the package documentation.
type Watchdog struct {
	clock      Clock
	tick       time.Duration
	batch      int
	pipeLeases int       // pipelineLeases (tests lower it)
	base       time.Time // tick 0: ticks count monotonic time from here, never the wall clock

	mu    sync.Mutex
	slots [wheelSlots]map[*Lease]struct{}
	// By when the wheel must turn for slots[i] (see noteDueLocked), offsets from base,
	// noDue if none; never late. lossDue[i]: leases placed at their loss time,
	// reset when lossN[i], their count, hits 0. renewDue[i]: leases placed at a
	// renewal; a moved one's entry stays until the wheel passes the slot, but
	// hardly brings a handoff forward.
	lossDue  [wheelSlots]time.Duration
	renewDue [wheelSlots]time.Duration
	lossN    [wheelSlots]int32
	cursor   int64 // last tick processed
	count    int   // leases in the wheel
	running  bool
	wakeAt   time.Time // when the goroutine wakes next, on the clock
	kick     chan struct{}
	registry map[regKey]*Lease

	// Goroutine gen sends each round itself; if the reply is not back (flushing)
	// by handoffAt, when the wheel must turn again, handOver starts a new one.
	gen       uint64
	flushing  bool
	flushSeq  uint64
	handoffAt time.Time
	handoff   *time.Timer
	// asideQueues holds renewals sent aside (other Redlock masters), a goroutine per client.
	asideQueues map[conn.Client]*asideQueue

	mp      metric.MeterProvider
	tp      trace.TracerProvider
	metrics *telemetry.Watchdog
	tracer  trace.Tracer

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
		kick: make(chan struct{}, 1), registry: map[regKey]*Lease{}, asideQueues: map[conn.Client]*asideQueue{}}
	for _, o := range opts {
		o(w)
	}
	for i := range w.slots {
		w.slots[i] = map[*Lease]struct{}{}
		w.lossDue[i], w.renewDue[i] = noDue, noDue
	}
	w.base = w.clock.Now()
	w.metrics = telemetry.NewWatchdog(w.mp)
	w.tracer = tracing.Tracer(w.tp)
	return w
}

// Now is the watchdog's clock, read by an acquire just before it sends: the lease's start.
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
