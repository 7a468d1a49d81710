package lease

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/relock-go/relock/internal/clock"
	"github.com/relock-go/relock/internal/errs"
	"github.com/relock-go/relock/internal/keys"
	"github.com/relock-go/relock/internal/scripts"
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
	// round is sent as several pipelines, one after the other, each with its
	// own reply timeout.
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
	// senders holds the renewals queued for a client whose pipeline runs
	// aside (the other masters of a Redlock round): one goroutine per client.
	senders map[redis.UniversalClient]*sender

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
	client redis.UniversalClient
	id     string
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

// Kind is how one primitive renews its leases: Script renews a batch of
// leases of one cluster slot. KEYS holds KeysPer keys per lease; ARGV
// holds, for each lease in turn, its lease time in milliseconds and then
// its ArgsPer arguments (each lease may have its own lease time); it
// returns an array with 1 (renewed) or 0 (gone) per lease.
type Kind struct {
	Name    string
	Script  *scripts.Script
	KeysPer int
	ArgsPer int
}

// Target is one key set of a lease on one Redis client; a Redlock lease
// has one target per master.
type Target struct {
	// Kind overrides Spec.Kind for this target (a Redlock over members of
	// different primitives).
	Kind   *Kind
	Client redis.UniversalClient
	Keys   []string // Keys[0] decides the cluster slot
	Args   []any
}

// Spec describes a lease to keep.
type Spec struct {
	Kind    *Kind
	Targets []Target
	// Quorum is how many targets must renew (default: all).
	Quorum int
	// Timeout is the lease time written by the acquire.
	Timeout time.Duration
	// Renew false tracks a fixed lease: no renewal, lost when it ends.
	Renew bool
	// ID registers the lease for Find under (Targets[0].Client, ID); empty
	// leaves it unregistered.
	ID string
	// Token is the fencing token of the acquisition (0: none); see RetainAt.
	Token int64
	// Name and Op label the ErrLockLost the holder gets.
	Name, Primitive string
}

// Lease is one held lease.
type Lease struct {
	w    *Watchdog
	spec Spec

	// guarded by w.mu
	lastOK  time.Time // send time of the last successful acquire/renewal
	renewAt time.Time
	lossAt  time.Time
	lossNs  atomic.Int64 // lossAt - w.base, for Check's lock-free read
	slot    int
	inWheel bool
	atLoss  bool // placed at lossAt (see Watchdog.lossDue)
	// A renewal round sends one script per target. It is decided as soon
	// as the quorum renewed (or cannot), without waiting for a stalled
	// target; results of older rounds are ignored.
	round   int
	open    bool // a round is under way, undecided
	pending int  // targets of the round not answered yet
	okN     int
	goneN   int
	errN    int
	stopped bool
	lost    bool
	refs    int
	nextCB  int
	onLost  []lostCB // few: one per hold sharing the lease
	lostErr error
	eventAt time.Time
	token   int64 // highest fencing token of the acquisitions sharing it
}

// Start begins tracking a lease whose acquire was sent at sentAt (read
// from Now before sending). The lease starts with one reference.
func (w *Watchdog) Start(spec Spec, sentAt time.Time) *Lease {
	if spec.Quorum <= 0 || spec.Quorum > len(spec.Targets) {
		spec.Quorum = len(spec.Targets)
	}
	l := &Lease{w: w, spec: spec, refs: 1, token: spec.Token}
	w.mu.Lock()
	defer w.mu.Unlock()
	l.setOKLocked(sentAt)
	if spec.ID != "" {
		w.registry[regKey{spec.Targets[0].Client, spec.ID}] = l
	}
	w.scheduleLocked(l)
	return l
}

// Find returns the live lease registered under (client, id), if any.
func (w *Watchdog) Find(client redis.UniversalClient, id string) *Lease {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.registry[regKey{client, id}]
}

func (l *Lease) setOKLocked(sentAt time.Time) {
	l.lastOK = sentAt
	l.lossAt = sentAt.Add(l.spec.Timeout - l.w.margin(l.spec.Timeout))
	l.lossNs.Store(int64(l.lossAt.Sub(l.w.base)))
	l.renewAt = sentAt.Add(l.spec.Timeout / 3)
}

// margin is how much earlier than the server could let a lease lapse the
// holder is told: one tick of wheel lateness, 1% clock-rate drift and a
// millisecond of scheduling.
func (w *Watchdog) margin(timeout time.Duration) time.Duration {
	return w.tick + timeout/100 + time.Millisecond
}

func (w *Watchdog) retryDelay(timeout time.Duration) time.Duration {
	return min(max(timeout/30, w.tick), time.Second)
}

// RetainAt adds a reference for an acquisition of the same hold written at
// sentAt with fencing token token, unless the lease was stopped or lost
// (false: the caller starts a new lease). One critical section, so that it
// cannot interleave with Release.
func (l *Lease) RetainAt(sentAt time.Time, token int64) bool {
	w := l.w
	w.mu.Lock()
	defer w.mu.Unlock()
	if l.stopped || l.lost {
		return false
	}
	l.refs++
	l.token = max(l.token, token)
	if !sentAt.Before(l.lastOK) {
		l.setOKLocked(sentAt)
		if !l.open {
			w.scheduleLocked(l)
		}
	}
	return true
}

// Token is the highest fencing token of the acquisitions sharing the lease.
func (l *Lease) Token() int64 {
	l.w.mu.Lock()
	defer l.w.mu.Unlock()
	return l.token
}

// Release drops a reference; the last one stops the lease in the same
// critical section (so no RetainAt can revive it), with Stop's guarantee.
// It reports whether it was the last.
func (l *Lease) Release() bool {
	w := l.w
	w.mu.Lock()
	defer w.mu.Unlock()
	if l.refs > 0 {
		l.refs--
	}
	if l.refs > 0 {
		return false
	}
	w.stopLocked(l)
	return true
}

// Refs is the number of references.
func (l *Lease) Refs() int {
	l.w.mu.Lock()
	defer l.w.mu.Unlock()
	return l.refs
}

// Timeout is the lease time the acquire wrote and renewals write.
func (l *Lease) Timeout() time.Duration { return l.spec.Timeout }

// Lost reports the error the lease was lost with, or nil.
func (l *Lease) Lost() error {
	l.w.mu.Lock()
	defer l.w.mu.Unlock()
	return l.lostErr
}

// Lapsed reports whether the lease may have lapsed on the server: it was
// lost, or the time by which a renewal had to succeed has passed (a
// stopped lease is no longer renewed, so this tells a late release whether
// the key could have expired under it).
func (l *Lease) Lapsed() bool {
	l.w.mu.Lock()
	defer l.w.mu.Unlock()
	return l.lost || !l.w.clock.Now().Before(l.lossAt)
}

// Check returns the error the lease was lost with, or nil while it holds.
// When the instant by which a renewal had to succeed has passed but the
// wheel has not turned to it yet (the process was paused, as by SIGSTOP,
// or its goroutine runs late), Check declares the loss at once, runs the
// OnLost callbacks on the caller's goroutine and returns the loss: a
// holder that resumes must not see its hold as live for an instant. The
// check is lock-free while the lease is in time.
func (l *Lease) Check() error {
	w := l.w
	if w.clock.Now().Sub(w.base) < time.Duration(l.lossNs.Load()) {
		return nil
	}
	w.mu.Lock()
	if l.lost || l.stopped || w.clock.Now().Before(l.lossAt) {
		err := l.lostErr
		w.mu.Unlock()
		return err
	}
	cbs := w.loseLocked(l, lossReason(l))
	err := l.lostErr
	w.mu.Unlock()
	runLost(cbs, err)
	return err
}

func lossReason(l *Lease) string {
	if l.spec.Renew {
		return fmt.Sprintf("not renewed within %v", l.spec.Timeout)
	}
	return "lease ended"
}

// OnLost registers f to be called once if the lease is lost; the returned
// func unregisters it. f runs on the goroutine that finds the loss: the
// watchdog's, or the caller of Check or Lose; it must not block, nor take
// a lock that such a caller may hold. When the lease is already lost, f is
// called at once.
func (l *Lease) OnLost(f func(error)) (remove func()) {
	w := l.w
	w.mu.Lock()
	if l.lost {
		err := l.lostErr
		w.mu.Unlock()
		f(err)
		return func() {}
	}
	id := l.nextCB
	l.nextCB++
	l.onLost = append(l.onLost, lostCB{id, f})
	w.mu.Unlock()
	return func() {
		w.mu.Lock()
		for i, cb := range l.onLost {
			if cb.id == id {
				l.onLost = append(l.onLost[:i], l.onLost[i+1:]...)
				break
			}
		}
		w.mu.Unlock()
	}
}

type lostCB struct {
	id int
	f  func(error)
}

// Lose declares the lease lost now (its holder found the key gone) and
// tells the holders.
func (l *Lease) Lose(reason string) {
	l.w.mu.Lock()
	cbs := l.w.loseLocked(l, reason)
	err := l.lostErr
	l.w.mu.Unlock()
	runLost(cbs, err)
}

// Stop ends the lease's tracking. When Stop returns, no renewal of it will
// be sent: one already handed to the network may still be answered (Stop
// does not wait for a reply), and one not yet handed over is dropped (a
// pipeline is committed, under the watchdog's lock, just before it is
// written, and a stopped lease's renewal is left out). Stop never blocks on
// the network, so it may be called from an OnLost callback.
func (l *Lease) Stop() {
	w := l.w
	w.mu.Lock()
	w.stopLocked(l)
	w.mu.Unlock()
}

func (w *Watchdog) stopLocked(l *Lease) {
	if l.stopped {
		return
	}
	l.stopped = true
	w.unscheduleLocked(l)
	w.unregisterLocked(l)
}

func (w *Watchdog) unregisterLocked(l *Lease) {
	if l.spec.ID == "" {
		return
	}
	k := regKey{l.spec.Targets[0].Client, l.spec.ID}
	if w.registry[k] == l {
		delete(w.registry, k)
	}
}

// loseLocked marks l lost and returns the callbacks to run.
func (w *Watchdog) loseLocked(l *Lease, reason string) []func(error) {
	if l.lost || l.stopped {
		return nil
	}
	l.lost = true
	l.lostErr = errs.New("renew", l.spec.Primitive, l.spec.Name, fmt.Errorf("%w: %s", errs.ErrLockLost, reason))
	w.unscheduleLocked(l)
	w.unregisterLocked(l)
	w.stats.lost.Add(1)
	w.metrics.Lost(l.spec.Primitive)
	cbs := make([]func(error), 0, len(l.onLost))
	for _, cb := range l.onLost {
		cbs = append(cbs, cb.f)
	}
	l.onLost = nil
	return cbs
}

func runLost(cbs []func(error), err error) {
	for _, f := range cbs {
		f(err)
	}
}

func (w *Watchdog) tickOf(t time.Time) int64 {
	return int64(t.Sub(w.base) / w.tick)
}

// scheduleLocked puts l in the wheel at its next event.
func (w *Watchdog) scheduleLocked(l *Lease) {
	at := l.lossAt
	if l.spec.Renew && !l.open && l.renewAt.Before(at) {
		at = l.renewAt
	}
	w.placeLocked(l, at)
}

func (w *Watchdog) placeLocked(l *Lease, at time.Time) {
	if l.inWheel {
		// Moved, not removed: the wheel does not empty, so the goroutine
		// need not hear of it (a re-entry must not wake it).
		w.removeLocked(l)
	}
	t := w.tickOf(at)
	if t <= w.cursor {
		t = w.cursor + 1
	}
	l.slot = int(t % wheelSlots)
	w.slots[l.slot][l] = struct{}{}
	l.inWheel = true
	l.eventAt = at
	w.count++
	due := w.dueOf(l, at)
	w.noteDueLocked(l, due)
	if !w.running {
		w.running = true
		w.gen++
		go w.run(w.gen)
		return
	}
	if at.Before(w.wakeAt) {
		w.kickLocked() // due before the goroutine would wake
	}
	if w.flushing {
		if dueAt := w.base.Add(due); dueAt.Before(w.handoffAt) {
			// Due before the flushing goroutine would hand the wheel over.
			w.handoffAt = dueAt
			w.handoff.Reset(max(dueAt.Sub(w.clock.Now()), 0))
		}
	}
}

// dueOf is the instant (as an offset from base) by which the wheel must
// turn for l placed at at: at its loss time when at is that (a loss check,
// a round in flight, a fixed lease), else halfway from the renewal to the
// loss, which leaves the renewal half its slack for its round trip. It is
// never later than l's loss time.
func (w *Watchdog) dueOf(l *Lease, at time.Time) time.Duration {
	d := at.Sub(w.base)
	if slack := l.lossAt.Sub(at); slack > 0 {
		d += slack / 2
	}
	return d
}

// noteDueLocked records in l's slot its due, as dueOf returned.
func (w *Watchdog) noteDueLocked(l *Lease, due time.Duration) {
	l.atLoss = !l.eventAt.Before(l.lossAt)
	if l.atLoss {
		w.lossN[l.slot]++
		w.lossDue[l.slot] = min(w.lossDue[l.slot], due)
	} else {
		w.renewDue[l.slot] = min(w.renewDue[l.slot], due)
	}
}

// removeLocked takes l out of its slot.
func (w *Watchdog) removeLocked(l *Lease) {
	delete(w.slots[l.slot], l)
	l.inWheel = false
	w.count--
	if l.atLoss {
		if w.lossN[l.slot]--; w.lossN[l.slot] == 0 {
			w.lossDue[l.slot] = noDue
		}
	}
}

// dueLocked is the earliest instant by which the wheel must turn (a lower
// bound: early, never late).
func (w *Watchdog) dueLocked() time.Time {
	m := noDue
	for i := range w.lossDue {
		m = min(m, w.lossDue[i], w.renewDue[i])
	}
	return w.base.Add(m)
}

func (w *Watchdog) kickLocked() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

func (w *Watchdog) unscheduleLocked(l *Lease) {
	if l.inWheel {
		w.removeLocked(l)
		// Let a goroutine asleep for long see the empty wheel (and exit
		// after idleLinger); one that wakes within idleLinger sees it then.
		if w.count == 0 && w.running && w.wakeAt.After(w.clock.Now().Add(idleLinger)) {
			w.kickLocked()
		}
	}
}

// run is the wheel's goroutine (generation gen); it exits when the wheel
// has been empty for idleLinger, or after a round whose reply outlived the
// instant the wheel had to turn again (a new goroutine runs the wheel then).
func (w *Watchdog) run(gen uint64) {
	timer := w.clock.NewTimer(time.Hour)
	timer.Stop() // armed below, at each turn
	defer timer.Stop()
	var idle *time.Timer // real time: a fake clock must not see it; made once
	defer func() {
		if idle != nil {
			idle.Stop()
		}
	}()
	for {
		w.mu.Lock()
		if w.count == 0 {
			w.wakeAt = w.clock.Now().Add(idleLinger)
			w.mu.Unlock()
			if idle == nil {
				idle = time.NewTimer(idleLinger)
			} else {
				idle.Reset(idleLinger)
			}
			select {
			case <-idle.C:
			case <-w.kick:
			}
			idle.Stop()
			w.mu.Lock()
			if w.count == 0 {
				w.running = false
				w.mu.Unlock()
				return
			}
			w.mu.Unlock()
			continue
		}
		now := w.clock.Now()
		w.stats.turns.Add(1)
		batch, lost := w.advanceLocked(now)
		empty := w.count == 0
		sleep := w.nextWakeLocked(now)
		w.wakeAt = now.Add(sleep)
		if len(batch) > 0 {
			w.startFlushLocked(now)
		}
		w.mu.Unlock()

		for _, lc := range lost {
			runLost(lc.cbs, lc.err)
		}
		if len(batch) > 0 {
			w.send(batch, now)
			if !w.endFlush(gen) {
				return // handed over: another goroutine runs the wheel
			}
		}
		if empty {
			continue // to the idle wait
		}
		// After a slow round this instant has passed: the timer fires at
		// once and advanceLocked catches up on the ticks missed.
		timer.ResetAt(now.Add(sleep))
		select {
		case <-timer.C():
		case <-w.kick:
			if !timer.Stop() {
				select {
				case <-timer.C():
				default:
				}
			}
		}
	}
}

// startFlushLocked arms the handoff for a round the wheel's goroutine is
// about to send: if the round is not done by the earliest instant the wheel
// must turn, another goroutine takes the wheel over. The timer runs on real
// time for the clock's duration (a fake clock has no timer callbacks).
func (w *Watchdog) startFlushLocked(now time.Time) {
	w.flushing = true
	w.flushSeq++
	seq := w.flushSeq
	w.handoffAt = w.dueLocked()
	w.handoff = time.AfterFunc(max(w.handoffAt.Sub(now), 0), func() { w.handOver(seq) })
}

// endFlush ends the round of the wheel goroutine gen; false if the wheel
// was handed over meanwhile.
func (w *Watchdog) endFlush(gen uint64) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.gen != gen {
		return false
	}
	w.flushing = false
	w.handoff.Stop()
	w.handoff = nil
	return true
}

// handOver starts a new wheel goroutine when round seq is still waiting
// for its reply at the instant the wheel must turn.
func (w *Watchdog) handOver(seq uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.flushing || w.flushSeq != seq {
		return
	}
	w.flushing = false
	w.handoff = nil
	w.gen++
	w.stats.handoffs.Add(1)
	go w.run(w.gen)
}

type lostCall struct {
	cbs []func(error)
	err error
}

// renewal is one target of one lease to renew in this round.
type renewal struct {
	l      *Lease
	target int
	round  int
}

// advanceLocked processes every tick up to now.
func (w *Watchdog) advanceLocked(now time.Time) ([]renewal, []lostCall) {
	var batch []renewal
	var lost []lostCall
	end := w.tickOf(now)
	start := w.cursor + 1
	if end-start >= wheelSlots {
		start = end - wheelSlots + 1
	}
	if end > w.cursor {
		w.cursor = end // placements below land after the ticks processed here
	}
	for t := start; t <= end; t++ {
		s := t % wheelSlots
		slot := w.slots[s]
		// Recomputed from the leases that stay (a later turn of the wheel)
		// and those placed here meanwhile.
		w.renewDue[s] = noDue
		w.lossDue[s] = noDue
		for l := range slot {
			if w.tickOf(l.eventAt) > end {
				if due := w.dueOf(l, l.eventAt); l.atLoss {
					w.lossDue[s] = min(w.lossDue[s], due)
				} else {
					w.renewDue[s] = min(w.renewDue[s], due)
				}
				continue // a later turn of the wheel
			}
			// A renewal that falls due later in this tick goes in this
			// tick's round (early by less than a tick, which is safe: one
			// round per tick); a loss check keeps its instant (next tick).
			renew := l.spec.Renew && !l.open && l.renewAt.Before(l.lossAt) && w.tickOf(l.renewAt) <= end
			if l.eventAt.After(now) && !renew {
				w.placeLocked(l, l.eventAt) // due later in this tick: next tick
				continue
			}
			w.unscheduleLocked(l)
			switch {
			case !now.Before(l.lossAt):
				if cbs := w.loseLocked(l, lossReason(l)); cbs != nil {
					lost = append(lost, lostCall{cbs, l.lostErr})
				}
			case renew:
				l.round++
				l.open = true
				l.pending = len(l.spec.Targets)
				l.okN, l.goneN, l.errN = 0, 0, 0
				for i := range l.spec.Targets {
					batch = append(batch, renewal{l, i, l.round})
				}
				w.placeLocked(l, l.lossAt) // the loss check runs even while in flight
			default:
				w.scheduleLocked(l)
			}
		}
	}
	return batch, lost
}

// nextWakeLocked returns how long to sleep until the earliest event of the
// next tick that has one due in this turn of the wheel.
func (w *Watchdog) nextWakeLocked(now time.Time) time.Duration {
	for i := int64(1); i <= wheelSlots; i++ {
		t := w.cursor + i
		var first time.Time
		for l := range w.slots[t%wheelSlots] {
			if w.tickOf(l.eventAt) <= t && (first.IsZero() || l.eventAt.Before(first)) {
				first = l.eventAt
			}
		}
		if !first.IsZero() {
			// Not before the tick begins: only then does advanceLocked
			// take the slot (a lease moved here from the tick before is
			// due earlier, and waking for it would spin until then).
			if start := w.base.Add(time.Duration(t) * w.tick); first.Before(start) {
				first = start
			}
			return max(first.Sub(now), 0)
		}
	}
	return time.Duration(wheelSlots) * w.tick
}

var errGone = errors.New("lease key gone")

// tgt is the target r renews.
func (r renewal) tgt() *Target { return &r.l.spec.Targets[r.target] }

// send renews a round's batch, whose round started at sentAt. The wheel's
// goroutine sends it itself: per client the pipelines of one script per
// (slot, kind) chunk. A round over several clients (the masters of a
// Redlock) sends the largest share itself and hands each other client's to
// that client's sender goroutine, so that a stalled master holds back
// neither the wheel nor the other masters.
func (w *Watchdog) send(batch []renewal, sentAt time.Time) {
	c0 := batch[0].tgt().Client
	one := true
	for _, r := range batch[1:] {
		if r.tgt().Client != c0 {
			one = false
			break
		}
	}
	if one {
		w.flush(c0, batch, sentAt)
		return
	}
	byClient := map[redis.UniversalClient][]renewal{}
	for _, r := range batch {
		c := r.tgt().Client
		byClient[c] = append(byClient[c], r)
	}
	var inline redis.UniversalClient
	for c, rs := range byClient {
		if inline == nil || len(rs) > len(byClient[inline]) {
			inline = c
		}
	}
	for c, rs := range byClient {
		if c != inline {
			w.sendAside(c, rs, sentAt)
		}
	}
	w.flush(inline, byClient[inline], sentAt)
}

// sender queues renewals for a client whose sender goroutine is busy.
type sender struct {
	rs     []renewal
	sentAt time.Time // start of the earliest round queued
}

// sendAside flushes rs on c's sender goroutine, started if there is none:
// at most one goroutine per client, however long its server stalls.
func (w *Watchdog) sendAside(c redis.UniversalClient, rs []renewal, sentAt time.Time) {
	w.mu.Lock()
	if q := w.senders[c]; q != nil {
		if len(q.rs) == 0 {
			q.sentAt = sentAt
		}
		q.rs = append(q.rs, rs...)
		w.mu.Unlock()
		return
	}
	if w.senders == nil {
		w.senders = map[redis.UniversalClient]*sender{}
	}
	w.senders[c] = &sender{}
	w.mu.Unlock()
	go w.drain(c, rs, sentAt)
}

func (w *Watchdog) drain(c redis.UniversalClient, rs []renewal, sentAt time.Time) {
	for {
		w.flush(c, rs, sentAt)
		w.mu.Lock()
		q := w.senders[c]
		if len(q.rs) == 0 {
			delete(w.senders, c)
			w.mu.Unlock()
			return
		}
		rs, sentAt = q.rs, q.sentAt
		q.rs = nil
		w.mu.Unlock()
	}
}

type group struct {
	kind *Kind
	slot int
}

// part is one renewal script: leases of one (kind, slot), at most w.batch.
type part struct {
	kind *Kind
	rs   []renewal
	cmd  *redis.Cmd
}

// flush sends rs, whose round started at sentAt, to c: one script per
// part, in pipelines of at most w.pipeLeases leases sent one after the
// other, each with its own reply timeout.
func (w *Watchdog) flush(c redis.UniversalClient, rs []renewal, sentAt time.Time) {
	_, cluster := c.(*redis.ClusterClient)
	var groups [][]renewal
	var kinds []*Kind
	index := map[group]int{}
	for _, r := range rs {
		t := r.tgt()
		g := group{kind: r.l.spec.Kind}
		if t.Kind != nil {
			g.kind = t.Kind
		}
		if cluster {
			g.slot = keys.Slot(t.Keys[0])
		}
		i, ok := index[g]
		if !ok {
			i = len(groups)
			index[g] = i
			groups = append(groups, nil)
			kinds = append(kinds, g.kind)
		}
		groups[i] = append(groups[i], r)
	}
	var parts []part
	for i, grs := range groups {
		for len(grs) > 0 {
			n := min(len(grs), w.batch)
			parts = append(parts, part{kind: kinds[i], rs: grs[:n:n]})
			grs = grs[n:]
		}
	}
	if cc, ok := c.(*redis.ClusterClient); ok && len(parts) > 1 {
		w.flushNodes(cc, parts, sentAt)
		return
	}
	w.execAll(c, parts, sentAt)
}

// execAll sends parts in pipelines of at most w.pipeLeases leases, one
// after the other.
func (w *Watchdog) execAll(c redis.UniversalClient, parts []part, sentAt time.Time) {
	for len(parts) > 0 {
		n, leases := 0, 0
		for n < len(parts) && (n == 0 || leases+len(parts[n].rs) <= w.pipeLeases) {
			leases += len(parts[n].rs)
			n++
		}
		w.exec(c, parts[:n], sentAt)
		parts = parts[n:]
	}
}

// flushNodes sends the parts of each master of a cluster as pipelines of
// their own, the masters concurrently. One cluster pipeline over every
// master would share one context, and go-redis sets the error of a context
// that ends while it retries a dead master on every command of the
// pipeline, the live masters' answered renewals too: one master down would
// lose every lease of the cluster.
func (w *Watchdog) flushNodes(cc *redis.ClusterClient, parts []part, sentAt time.Time) {
	var addrs []string
	byNode := map[string][]part{}
	for _, p := range parts {
		addr := "" // unknown master: sent on its own, and fails on its own
		if n, err := cc.MasterForKey(context.Background(), p.rs[0].tgt().Keys[0]); err == nil {
			addr = n.Options().Addr
		}
		if _, ok := byNode[addr]; !ok {
			addrs = append(addrs, addr)
		}
		byNode[addr] = append(byNode[addr], p)
	}
	if len(addrs) == 1 {
		w.execAll(cc, parts, sentAt)
		return
	}
	var wg sync.WaitGroup
	for _, addr := range addrs[1:] {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.execAll(cc, byNode[addr], sentAt)
		}()
	}
	w.execAll(cc, byNode[addrs[0]], sentAt)
	wg.Wait()
}

// exec sends one pipeline of parts and records the replies.
func (w *Watchdog) exec(c redis.UniversalClient, parts []part, sentAt time.Time) {
	sent := false
	var span trace.Span
	spanCtx := context.Background()
	for attempt := 0; attempt < 2; attempt++ {
		pipe := c.Pipeline()
		w.build(pipe, parts)
		deadline, live, dropped := w.commit(parts)
		if live == 0 {
			break
		}
		if dropped {
			pipe = c.Pipeline()
			w.build(pipe, parts)
		}
		// A reply after the earliest loss it carries is of no use; until
		// then it is worth waiting for (a larger pipeline takes longer).
		timeout := max(deadline.Sub(w.clock.Now()), minReplyTimeout)
		if span == nil {
			spanCtx, span = w.tracer.Start(context.Background(), tracing.SpanWatchdogRenew, w.spanStart...)
			defer span.End()
		}
		ctx, cancel := context.WithTimeout(spanCtx, timeout)
		w.stats.roundTrips.Add(1)
		w.stats.scripts.Add(int64(pipe.Len()))
		_, _ = pipe.Exec(ctx) // per-command errors are read below
		sent = true
		noscript := false
		for _, p := range parts {
			if p.cmd != nil && scripts.IsNoScript(p.cmd.Err()) {
				noscript = true
			}
		}
		if noscript {
			// Loaded, then sent again: not for leases stopped meanwhile,
			// whose Stop has returned (commit leaves them out).
			loaded := map[*Kind]bool{}
			for _, p := range parts {
				if !loaded[p.kind] {
					loaded[p.kind] = true
					_ = p.kind.Script.Preload(ctx, c)
				}
			}
		}
		cancel()
		if !noscript {
			break
		}
	}
	if !sent {
		return
	}

	now := w.clock.Now()
	var lost []lostCall
	var leases, renewed, gone, failed int
	var firstErr error
	w.mu.Lock()
	for _, p := range parts {
		if p.cmd == nil {
			continue
		}
		vals, err := p.cmd.Slice()
		for i, r := range p.rs {
			res := errGone
			switch {
			case err != nil:
				res = err
			case i < len(vals) && vals[i] == int64(1):
				res = nil
			}
			leases++
			switch {
			case res == nil:
				renewed++
			case res == errGone:
				gone++
				w.metrics.Failed(r.l.spec.Primitive, telemetry.Gone, 1)
			default:
				failed++
				if firstErr == nil {
					firstErr = res
				}
				w.metrics.Failed(r.l.spec.Primitive, failureReason(res), 1)
			}
			if lc, ok := w.completeLocked(r, res, sentAt, now); ok {
				lost = append(lost, lc)
			}
		}
	}
	w.mu.Unlock()
	if span.IsRecording() {
		span.SetAttributes(tracing.WatchdogLeases.Int(leases), tracing.WatchdogRenewed.Int(renewed),
			tracing.WatchdogGone.Int(gone), tracing.WatchdogFailed.Int(failed))
		if firstErr != nil {
			span.RecordError(firstErr)
			span.SetStatus(codes.Error, firstErr.Error())
		}
	}
	for _, lc := range lost {
		runLost(lc.cbs, lc.err)
	}
}

// failureReason classifies a renewal's error: no reply in time, or any
// other error.
func failureReason(err error) telemetry.Reason {
	var nerr net.Error
	if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &nerr) && nerr.Timeout()) {
		return telemetry.ReplyTimeout
	}
	return telemetry.Failed
}

// build queues one script per non-empty part on p.
func (w *Watchdog) build(p redis.Pipeliner, parts []part) {
	lastT, boxed := time.Duration(-1), any(nil) // the lease time, boxed once per pipeline mostly
	for i := range parts {
		pt := &parts[i]
		pt.cmd = nil
		if len(pt.rs) == 0 {
			continue
		}
		ks := make([]string, 0, len(pt.rs)*pt.kind.KeysPer)
		args := make([]any, 0, len(pt.rs)*(pt.kind.ArgsPer+1))
		for _, r := range pt.rs {
			t := r.tgt()
			if to := r.l.spec.Timeout; to != lastT {
				lastT, boxed = to, to.Milliseconds()
			}
			ks = append(ks, t.Keys...)
			args = append(args, boxed)
			args = append(args, t.Args...)
		}
		pt.cmd = pt.kind.Script.EvalSha(context.Background(), p, ks, args...)
	}
}

// commit decides, in one critical section just before the pipeline is
// written, what it carries: renewals of leases stopped or lost meanwhile
// are dropped (a Stop that returned before this sees none of its renewals
// sent). Those of a round already decided by a quorum of other targets are
// kept: they keep the extra masters of a Redlock alive. It returns the
// earliest loss time of the leases kept, how many are kept, and whether any
// was dropped.
func (w *Watchdog) commit(parts []part) (deadline time.Time, live int, dropped bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for i := range parts {
		rs := parts[i].rs
		keep := rs[:0]
		for _, r := range rs {
			l := r.l
			if l.stopped || l.lost {
				dropped = true
				continue
			}
			if deadline.IsZero() || l.lossAt.Before(deadline) {
				deadline = l.lossAt
			}
			keep = append(keep, r)
		}
		parts[i].rs = keep
		live += len(keep)
	}
	return deadline, live, dropped
}

// completeLocked records one target's renewal result and decides the
// round as soon as it can: renewed (quorum), lost (key gone on more than
// len-quorum targets), or, once every target answered, retry soon.
func (w *Watchdog) completeLocked(r renewal, res error, sentAt, now time.Time) (lostCall, bool) {
	l := r.l
	if r.round != l.round || !l.open {
		return lostCall{}, false // decided already, or an older round
	}
	switch {
	case res == nil:
		l.okN++
	case errors.Is(res, errGone):
		l.goneN++
	default:
		l.errN++
		w.stats.errors.Add(1)
	}
	l.pending--
	if l.stopped || l.lost {
		l.open = false
		return lostCall{}, false
	}
	n := len(l.spec.Targets)
	switch {
	case l.okN >= l.spec.Quorum:
		l.open = false
		w.stats.renewed.Add(1)
		w.metrics.Renewed(l.spec.Primitive, 1)
		if !sentAt.Before(l.lastOK) { // else a RetainAt sent later already moved it
			due := l.renewAt
			l.setOKLocked(sentAt)
			l.renewAt = nextRenewal(due, sentAt, l.spec.Timeout/3)
		}
		w.scheduleLocked(l)
	case l.goneN > n-l.spec.Quorum:
		l.open = false
		cbs := w.loseLocked(l, "key gone")
		return lostCall{cbs, l.lostErr}, true
	case l.pending == 0:
		l.open = false
		retry := now.Add(w.retryDelay(l.spec.Timeout))
		if retry.Before(l.lossAt) {
			l.renewAt = retry
		} else {
			l.renewAt = l.lossAt
		}
		w.scheduleLocked(l)
	}
	return lostCall{}, false
}

// nextRenewal is when to renew next a lease whose renewal fell due at due
// and was sent at sentAt: due plus whole intervals, the first after sentAt.
// Each lease keeps its phase, so leases renewed in one round because the
// wheel ran late spread out again instead of staying one clump; and it is
// never later than sentAt+interval. (The loss time is from sentAt only.)
func nextRenewal(due, sentAt time.Time, interval time.Duration) time.Time {
	if interval <= 0 || due.After(sentAt) {
		return sentAt.Add(interval)
	}
	return due.Add((sentAt.Sub(due)/interval + 1) * interval)
}
