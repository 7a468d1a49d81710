package watchdog

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/internal/clock"
	"github.com/relock-go/relock/internal/errs"
	"github.com/relock-go/relock/internal/keys"
	"github.com/relock-go/relock/internal/scripts"
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
	clock Clock
	tick  time.Duration
	batch int
	base  time.Time // tick 0: ticks count monotonic time from here, never the wall clock

	mu       sync.Mutex
	slots    [wheelSlots]map[*Lease]struct{}
	cursor   int64 // last tick processed
	count    int   // leases in the wheel
	running  bool
	wakeAt   time.Time // when the goroutine wakes next, on the clock
	kick     chan struct{}
	registry map[regKey]*Lease

	stats struct {
		renewed, roundTrips, scripts, lost, errors atomic.Int64
	}
}

type regKey struct {
	client redis.UniversalClient
	id     string
}

// New returns a Watchdog; most programs use Default.
func New(opts ...Option) *Watchdog {
	w := &Watchdog{clock: clock.Real, tick: defaultTick, batch: defaultBatchSize,
		kick: make(chan struct{}, 1), registry: map[regKey]*Lease{}}
	for _, o := range opts {
		o(w)
	}
	for i := range w.slots {
		w.slots[i] = map[*Lease]struct{}{}
	}
	w.base = w.clock.Now()
	w.cursor = 0
	return w
}

// Now is the watchdog's clock; an acquire reads it just before it sends,
// so the lease is measured from the send time.
func (w *Watchdog) Now() time.Time { return w.clock.Now() }

// Stats counts the watchdog's work since it was made.
type Stats struct {
	Renewed    int64 // lease renewals that succeeded
	RoundTrips int64 // pipelines sent (one per client per batch)
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
// leases of one cluster slot. KEYS holds KeysPer keys per lease, ARGV holds
// the lease time in milliseconds followed by ArgsPer arguments per lease,
// and it returns an array with 1 (renewed) or 0 (gone) per lease.
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
	slot    int
	inWheel bool
	// A renewal round sends one script per target. It is decided as soon
	// as the quorum renewed (or cannot), without waiting for a stalled
	// target; results of older rounds are ignored.
	round        int
	open         bool // a round is under way, undecided
	pending      int  // targets of the round not answered yet
	undispatched int  // targets of the round not yet handed to the network
	okN          int
	goneN        int
	errN         int
	idle         chan struct{} // closed when every target of the round was dispatched
	stopped      bool
	lost         bool
	refs         int
	nextCB       int
	onLost       []lostCB // few: one per hold sharing the lease
	lostErr      error
	eventAt      time.Time
	token        int64 // highest fencing token of the acquisitions sharing it
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
// critical section (so no RetainAt can revive it) and, as Stop, returns once
// no renewal is in flight. It reports whether it was the last.
func (l *Lease) Release() bool {
	w := l.w
	w.mu.Lock()
	if l.refs > 0 {
		l.refs--
	}
	if l.refs > 0 {
		w.mu.Unlock()
		return false
	}
	wait := w.stopLocked(l)
	w.mu.Unlock()
	if wait != nil {
		<-wait
	}
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

// OnLost registers f to be called once if the lease is lost (from the
// watchdog's goroutine: f must not block); the returned func unregisters it. When the lease is
// already lost, f is called at once.
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

// Stop ends the lease's tracking. When Stop returns no renewal of it is
// in flight and none will be sent.
func (l *Lease) Stop() {
	w := l.w
	w.mu.Lock()
	wait := w.stopLocked(l)
	w.mu.Unlock()
	if wait != nil {
		<-wait
	}
}

func (w *Watchdog) stopLocked(l *Lease) chan struct{} {
	if l.stopped {
		return nil
	}
	l.stopped = true
	w.unscheduleLocked(l)
	w.unregisterLocked(l)
	if l.undispatched > 0 {
		return l.idle
	}
	return nil
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
		delete(w.slots[l.slot], l)
		l.inWheel = false
		w.count--
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
	if !w.running {
		w.running = true
		go w.run()
	} else if at.Before(w.wakeAt) {
		w.kickLocked() // due before the goroutine would wake
	}
}

func (w *Watchdog) kickLocked() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

func (w *Watchdog) unscheduleLocked(l *Lease) {
	if l.inWheel {
		delete(w.slots[l.slot], l)
		l.inWheel = false
		w.count--
		// Let a goroutine asleep for long see the empty wheel (and exit
		// after idleLinger); one that wakes within idleLinger sees it then.
		if w.count == 0 && w.running && w.wakeAt.After(w.clock.Now().Add(idleLinger)) {
			w.kickLocked()
		}
	}
}

// run is the wheel's goroutine; it exits when the wheel has been empty for
// idleLinger.
func (w *Watchdog) run() {
	timer := w.clock.NewTimer(time.Hour)
	timer.Stop() // armed below, at each turn
	defer timer.Stop()
	for {
		w.mu.Lock()
		if w.count == 0 {
			w.wakeAt = w.clock.Now().Add(idleLinger)
			w.mu.Unlock()
			idle := time.NewTimer(idleLinger)
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
		batch, lost := w.advanceLocked(now)
		empty := w.count == 0
		sleep := w.nextWakeLocked(now)
		w.wakeAt = now.Add(sleep)
		w.mu.Unlock()

		for _, lc := range lost {
			runLost(lc.cbs, lc.err)
		}
		if len(batch) > 0 {
			w.send(batch, now)
		}
		if empty {
			continue // to the idle wait
		}
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
		slot := w.slots[t%wheelSlots]
		for l := range slot {
			if w.tickOf(l.eventAt) > end {
				continue // a later turn of the wheel
			}
			if l.eventAt.After(now) {
				w.placeLocked(l, l.eventAt) // due later in this tick: next tick
				continue
			}
			w.unscheduleLocked(l)
			switch {
			case !now.Before(l.lossAt):
				reason := "lease ended"
				if l.spec.Renew {
					reason = fmt.Sprintf("not renewed within %v", l.spec.Timeout)
				}
				if cbs := w.loseLocked(l, reason); cbs != nil {
					lost = append(lost, lostCall{cbs, l.lostErr})
				}
			case l.spec.Renew && !l.open && !now.Before(l.renewAt):
				l.round++
				l.open = true
				l.pending, l.undispatched = len(l.spec.Targets), len(l.spec.Targets)
				l.okN, l.goneN, l.errN = 0, 0, 0
				l.idle = make(chan struct{})
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
			return max(first.Sub(now), 0)
		}
	}
	return time.Duration(wheelSlots) * w.tick
}

var errGone = errors.New("lease key gone")

// send renews a batch: per client one pipeline holding one script per
// (slot, kind) chunk. Each client's pipeline runs on its own goroutine so a
// slow server delays neither the wheel nor the other servers.
func (w *Watchdog) send(batch []renewal, sentAt time.Time) {
	byClient := map[redis.UniversalClient][]renewal{}
	for _, r := range batch {
		c := r.l.spec.Targets[r.target].Client
		byClient[c] = append(byClient[c], r)
	}
	for c, rs := range byClient {
		go w.flush(c, rs, sentAt)
	}
}

type group struct {
	kind *Kind
	slot int
}

func (w *Watchdog) flush(c redis.UniversalClient, rs []renewal, sentAt time.Time) {
	_, cluster := c.(*redis.ClusterClient)
	groups := map[group][]renewal{}
	var deadline time.Time
	for _, r := range rs {
		g := group{kind: r.l.spec.Kind}
		if k := r.l.spec.Targets[r.target].Kind; k != nil {
			g.kind = k
		}
		if cluster {
			g.slot = keys.Slot(r.l.spec.Targets[r.target].Keys[0])
		}
		groups[g] = append(groups[g], r)
		w.mu.Lock()
		if deadline.IsZero() || r.l.lossAt.Before(deadline) {
			deadline = r.l.lossAt
		}
		w.mu.Unlock()
	}
	// Bounded well below the lease: Stop (and so Unlock) waits for a round
	// in flight, and a failed round is retried soon anyway.
	timeout := max(min(deadline.Sub(sentAt), rs[0].l.spec.Timeout/10), 50*time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()

	type chunk struct {
		rs  []renewal
		cmd *redis.Cmd
	}
	var chunks []chunk
	build := func(p redis.Pipeliner) {
		chunks = chunks[:0]
		for g, grs := range groups {
			for len(grs) > 0 {
				n := min(len(grs), w.batch)
				part := grs[:n]
				grs = grs[n:]
				ks := make([]string, 0, n*g.kind.KeysPer)
				args := make([]any, 0, 1+n*(g.kind.ArgsPer+1))
				for _, r := range part {
					t := r.l.spec.Targets[r.target]
					ks = append(ks, t.Keys...)
					args = append(args, r.l.spec.Timeout.Milliseconds())
					args = append(args, t.Args...)
				}
				chunks = append(chunks, chunk{part, g.kind.Script.EvalSha(ctx, p, ks, args...)})
			}
		}
	}
	var execErr error
	for attempt := 0; attempt < 2; attempt++ {
		if attempt > 0 {
			// Sending again (the script was not loaded): not for leases
			// stopped meanwhile, whose Stop has returned.
			w.mu.Lock()
			for g, grs := range groups {
				live := grs[:0]
				for _, r := range grs {
					if !r.l.stopped {
						live = append(live, r)
					}
				}
				groups[g] = live
			}
			w.mu.Unlock()
		}
		pipe := c.Pipeline()
		build(pipe)
		if attempt == 0 {
			w.dispatched(rs)
		}
		w.stats.roundTrips.Add(1)
		w.stats.scripts.Add(int64(len(chunks)))
		_, execErr = pipe.Exec(ctx)
		noscript := false
		for _, ch := range chunks {
			if scripts.IsNoScript(ch.cmd.Err()) {
				noscript = true
			}
		}
		if !noscript {
			break
		}
		for g := range groups {
			_ = g.kind.Script.Preload(ctx, c)
		}
	}
	_ = execErr // per-command errors are read below

	now := w.clock.Now()
	var lost []lostCall
	w.mu.Lock()
	for _, ch := range chunks {
		vals, err := ch.cmd.Slice()
		for i, r := range ch.rs {
			res := errGone
			switch {
			case err != nil:
				res = err
			case i < len(vals) && vals[i] == int64(1):
				res = nil
			}
			if lc, ok := w.completeLocked(r, res, sentAt, now); ok {
				lost = append(lost, lc)
			}
		}
	}
	w.mu.Unlock()
	for _, lc := range lost {
		runLost(lc.cbs, lc.err)
	}
}

// dispatched records that rs are handed to the network: a Stop waiting
// for them may return.
func (w *Watchdog) dispatched(rs []renewal) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, r := range rs {
		if r.round == r.l.round && r.l.undispatched > 0 {
			r.l.undispatched--
			if r.l.undispatched == 0 {
				close(r.l.idle)
			}
		}
	}
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
		l.setOKLocked(sentAt)
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
