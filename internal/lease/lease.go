package lease

import (
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/relock-go/relock/internal/conn"
	"github.com/relock-go/relock/internal/errs"
	"github.com/relock-go/relock/internal/scripts"
)

// RenewScript renews one primitive's leases in batches of one cluster slot:
// KEYS holds KeysPer keys per lease, ARGV each lease's time in ms then its
// holder (Target.Arg); it returns 1 (renewed) or 0 (gone) per lease.
type RenewScript struct {
	Lua     *scripts.Script
	KeysPer int
}

// Target is one key set of a lease on one client; a Redlock has one per master.
type Target struct {
	// Renewer overrides Spec.Renewer (a Redlock over different primitives).
	Renewer *RenewScript
	Client  conn.Client
	Keys    []string // Keys[0] decides the cluster slot
	// Arg follows the lease time in ARGV: the holder's id, boxed once.
	Arg any
}

// ID names a lease for Find: its lock (primitive and name, spelt once per
// value) and owner; two fields, so an acquisition allocates no joined string.
type ID struct{ Lock, Owner string }

// Spec describes a lease to keep.
type Spec struct {
	Renewer *RenewScript
	Targets []Target
	// Quorum is how many targets must renew (default: all).
	Quorum int
	// Timeout is the lease time written by the acquire.
	Timeout time.Duration
	// Renew false tracks a fixed lease: no renewal, lost when it ends.
	Renew bool
	// ID registers the lease for Find under (Targets[0].Client, ID), unless zero.
	ID ID
	// Token is the fencing token of the acquisition (0: none); see RetainAt.
	Token int64
	// Name and Primitive label the ErrLockLost the holder gets.
	Name, Primitive string
	// Gone, if set, is told when a renewal finds the key gone (flush, restart,
	// eviction), so the primitive tells its waiters as a release would. Not told of other losses.
	Gone Listener
	// Sync is the acquisition's replica sync (Timeout 0: off): a renewal counts
	// only once replicas acked it, lest a failover leave the holder on a lapsed lease.
	Sync scripts.ReplicaPolicy
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
	// A round sends one script per target and is decided once the quorum renewed
	// (or cannot), not waiting for a stalled target; older rounds' results are ignored.
	round int
	open  bool // a round is under way, undecided
	// resendAt resends an undecided round of several targets: a stalled target
	// holds it open, and one that failed meanwhile would get no other try.
	resendAt  time.Time
	pending   int // targets of the round not answered yet
	okN       int
	goneN     int
	stopped   bool
	lost      bool
	refs      int
	nextCB    int
	onLost    []lostHook  // few: one per hold sharing the lease
	firstHook [1]lostHook // onLost's first backing array
	lostErr   error
	eventAt   time.Time
	token     int64 // highest fencing token of the acquisitions sharing it
}

// Start tracks a lease whose acquire was sent at sentAt (read from Now), with one reference.
func (w *Watchdog) Start(spec Spec, sentAt time.Time) *Lease {
	if spec.Quorum <= 0 || spec.Quorum > len(spec.Targets) {
		spec.Quorum = len(spec.Targets)
	}
	l := &Lease{w: w, spec: spec, refs: 1, token: spec.Token}
	w.mu.Lock()
	defer w.mu.Unlock()
	l.setOKLocked(sentAt)
	if spec.ID != (ID{}) {
		w.registry[regKey{spec.Targets[0].Client, spec.ID}] = l
	}
	w.scheduleLocked(l)
	return l
}

// Find returns the live lease registered under (client, id), if any.
func (w *Watchdog) Find(client conn.Client, id ID) *Lease {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.registry[regKey{client, id}]
}

// setOKLocked counts the lease from sentAt, its acquire's or renewal's send;
// false if a later send already counted.
func (l *Lease) setOKLocked(sentAt time.Time) bool {
	if sentAt.Before(l.lastOK) {
		return false
	}
	l.lastOK = sentAt
	l.lossAt = sentAt.Add(l.spec.Timeout - l.w.margin(l.spec.Timeout))
	l.lossNs.Store(int64(l.lossAt.Sub(l.w.base)))
	l.renewAt = sentAt.Add(l.spec.Timeout / 3)
	return true
}

// margin is how much before the server could let a lease lapse the holder
// is told: a tick of wheel lateness, 1% clock drift and 1 ms of scheduling.
func (w *Watchdog) margin(timeout time.Duration) time.Duration {
	return w.tick + timeout/100 + time.Millisecond
}

// RetainAt adds a reference for an acquisition of the same hold sent at sentAt
// with fencing token token, atomically with Release; false if stopped or lost.
func (l *Lease) RetainAt(sentAt time.Time, token int64) bool {
	w := l.w
	w.mu.Lock()
	defer w.mu.Unlock()
	if l.stopped || l.lost {
		return false
	}
	l.refs++
	l.token = max(l.token, token)
	if l.setOKLocked(sentAt) && !l.open {
		w.scheduleLocked(l)
	}
	return true
}

// Token is the highest fencing token of the acquisitions sharing the lease.
func (l *Lease) Token() int64 {
	l.w.mu.Lock()
	defer l.w.mu.Unlock()
	return l.token
}

// Release drops a reference and reports whether it was the last, which stops
// the lease (as Stop) in the same critical section, so no RetainAt revives it.
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

// Timeout is the lease time the acquire and renewals write (or the last Extend's).
func (l *Lease) Timeout() time.Duration {
	l.w.mu.Lock()
	defer l.w.mu.Unlock()
	return l.spec.Timeout
}

// renewer is t's renew script: its own, else the lease's.
func (l *Lease) renewer(t *Target) *RenewScript {
	if t.Renewer != nil {
		return t.Renewer
	}
	return l.spec.Renewer
}

// Renewer is the lease's renew script (as Spec.Renewer). It never changes.
func (l *Lease) Renewer() *RenewScript { return l.spec.Renewer }

// Renewed reports whether the watchdog renews the lease (false: fixed); it never changes.
func (l *Lease) Renewed() bool { return l.spec.Renew }

// Lost reports the error the lease was lost with, or nil.
func (l *Lease) Lost() error {
	l.w.mu.Lock()
	defer l.w.mu.Unlock()
	return l.lostErr
}

// Lapsed reports whether the lease may have lapsed on the server (lost, or
// past its loss time): whether the key could have expired under a late release.
func (l *Lease) Lapsed() bool {
	l.w.mu.Lock()
	defer l.w.mu.Unlock()
	return l.lost || !l.w.clock.Now().Before(l.lossAt)
}

// Check returns the error the lease was lost with, or nil while it holds
// (lock-free while in time). Past the loss time before the wheel turns (a
// paused process, a late goroutine), it declares the loss and runs OnLost
// listeners on the caller's goroutine: a resumed holder never sees a live hold.
func (l *Lease) Check() error {
	w := l.w
	if w.clock.Now().Sub(w.base) < time.Duration(l.lossNs.Load()) {
		return nil
	}
	w.mu.Lock()
	n := lossNotice{err: l.lostErr}
	if !l.lost && !l.stopped && !w.clock.Now().Before(l.lossAt) {
		n = w.loseLocked(l, lossReason(l))
	}
	w.mu.Unlock()
	n.tell()
	return n.err
}

func lossReason(l *Lease) string {
	if l.spec.Renew {
		return fmt.Sprintf("not renewed within %v", l.spec.Timeout)
	}
	return "lease ended"
}

// A Listener is told once, by OnLost, that its lease was lost.
type Listener interface{ Lost(err error) }

// LostFunc is a func as a Listener.
type LostFunc func(error)

// Lost calls f.
func (f LostFunc) Lost(err error) { f(err) }

// OnLost registers ln to be told once if the lease is lost and returns the
// id RemoveLost takes; if already lost, ln is told at once (id 0). ln runs
// on the goroutine finding the loss (the watchdog's, or Check's or Lose's
// caller): it must not block, nor take a lock such a caller may hold.
func (l *Lease) OnLost(ln Listener) (id int) {
	w := l.w
	w.mu.Lock()
	if l.lost {
		err := l.lostErr
		w.mu.Unlock()
		ln.Lost(err)
		return 0
	}
	l.nextCB++
	id = l.nextCB
	if l.onLost == nil {
		l.onLost = l.firstHook[:0] // most leases have one holder: no allocation
	}
	l.onLost = append(l.onLost, lostHook{id, ln})
	w.mu.Unlock()
	return id
}

// RemoveLost unregisters OnLost's listener id; 0, or an id removed or told, is a no-op.
func (l *Lease) RemoveLost(id int) {
	if id == 0 {
		return
	}
	l.w.mu.Lock()
	defer l.w.mu.Unlock()
	l.onLost = slices.DeleteFunc(l.onLost, func(cb lostHook) bool { return cb.id == id })
}

type lostHook struct {
	id int
	ln Listener
}

// Lose declares the lease lost now (its holder found the key gone) and tells the holders.
func (l *Lease) Lose(reason string) {
	l.w.mu.Lock()
	n := l.w.loseLocked(l, reason)
	l.w.mu.Unlock()
	n.tell()
}

// Stop ends tracking without blocking on the network (OnLost listeners may
// call it); no renewal is sent after it returns, but one in flight may be answered.
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
	w.dropLocked(l)
}

// dropLocked takes l out of the wheel and the registry.
func (w *Watchdog) dropLocked(l *Lease) {
	w.unscheduleLocked(l)
	if l.spec.ID == (ID{}) {
		return
	}
	if k := (regKey{l.spec.Targets[0].Client, l.spec.ID}); w.registry[k] == l {
		delete(w.registry, k)
	}
}

// lossNotice is a loss to tell once w.mu is released: the listeners and the error.
type lossNotice struct {
	cbs []Listener
	err error
}

func (n lossNotice) tell() {
	for _, ln := range n.cbs {
		ln.Lost(n.err)
	}
}

// loseLocked marks l lost and returns whom to tell (no one if it was lost or stopped).
func (w *Watchdog) loseLocked(l *Lease, reason string) lossNotice {
	if l.lost || l.stopped {
		return lossNotice{err: l.lostErr}
	}
	l.lost = true
	l.lostErr = errs.New("renew", l.spec.Primitive, l.spec.Name, fmt.Errorf("%w: %s", errs.ErrLockLost, reason))
	w.dropLocked(l)
	w.stats.lost.Add(1)
	w.metrics.Lost(l.spec.Primitive)
	n := lossNotice{make([]Listener, 0, len(l.onLost)), l.lostErr}
	for _, cb := range l.onLost {
		n.cbs = append(n.cbs, cb.ln)
	}
	l.onLost = nil
	return n
}
