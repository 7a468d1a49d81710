package core

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/codes"

	"github.com/relock-go/relock/internal/conn"
	"github.com/relock-go/relock/internal/errs"
	"github.com/relock-go/relock/internal/lease"
	"github.com/relock-go/relock/internal/telemetry"
)

// Key names one primitive (and side) in a context. A primitive makes its
// keys once (NewKey): a Key is one pointer, so looking a hold up in a
// context by it allocates nothing. Keys made apart from the same fields
// name the same primitive (Is): two Mutexes of one name on one client are
// one lock.
type Key struct{ f *keyFields }

type keyFields struct {
	client conn.Client
	kind   string // "lock", "rlock", "wlock", "semaphore", ...
	name   string
	id     string // tells apart values whose name alone is not the lock (a Redlock)
}

// NewKey returns the Key of the primitive of kind called name on client;
// id tells apart values whose name alone is not the lock (a Redlock's).
func NewKey(client conn.Client, kind, name, id string) Key {
	return Key{&keyFields{client: client, kind: kind, name: name, id: id}}
}

// Is reports whether k and o name the same primitive.
func (k Key) Is(o Key) bool { return k.f != nil && o.f != nil && (k.f == o.f || *k.f == *o.f) }

// Kind is the primitive's kind, as NewKey was given it.
func (k Key) Kind() string { return k.f.kind }

// Name is the primitive's name.
func (k Key) Name() string { return k.f.name }

// Client is the client the primitive was made on; the zero Client for a
// Key not made by NewKey.
func (k Key) Client() conn.Client {
	if k.f == nil {
		return conn.Client{}
	}
	return k.f.client
}

// ReleaseFunc gives a hold back to Redis. It runs once per hold, from
// Unlock or in the background when the acquiring context ended.
type ReleaseFunc func(ctx context.Context, h *Hold) error

// Hold is one acquisition.
type Hold struct {
	Owner string
	Token int64
	Lease *lease.Lease
	// Taken is what the acquisition took, as its primitive's release
	// needs it: a semaphore's permit id, a Redlock's round.
	Taken any
	// Telemetry, when set, is the primitive's: its release span and
	// hold metrics.
	Telemetry *telemetry.Release
	// Traced: the acquire's span was recording, so the release gets a
	// span too.
	Traced bool
	// Scoped: the hold ends when the acquiring context does, released in
	// the background (WithHoldScopedToContext). Otherwise that context
	// bounded the wait only, and the hold keeps its values alone.
	Scoped bool
	// Also are other keys this hold answers for: a Redlock's hold is a
	// hold of each of its members too, so that one re-enters on it.
	Also []Key
	// Live, when set, is the primitive value's set of live holds, which
	// names this one in the error of an Unlock through a wrong context.
	Live *Live
	// Reentry: the acquisition added a count to a hold its owner had in
	// Redis already.
	Reentry bool

	key   Key
	since time.Time

	metered   bool      // the start was recorded: record the end
	started   time.Time // when the hold began, if metered
	release   ReleaseFunc
	parent    context.Context
	cancel    context.CancelCauseFunc
	state     atomic.Int32
	stopAfter func() bool
	lostID    int     // its lease's OnLost registration
	ctx       holdCtx // the context Start returns, allocated with the hold
	lostErr   atomic.Pointer[error]
	bgDone    chan struct{} // closed when the background release has returned; made by parentDone
}

const (
	live int32 = iota
	released
	lost
	abandoned // its acquiring context ended; released in the background
)

type tokenKey struct{}

// Token returns the fencing token of the innermost hold ctx carries; false
// when that hold has ended or has no token (a semaphore's permit): a
// holder that presents the token of an ended hold to a fenced store is the
// very writer the token exists to refuse.
func Token(ctx context.Context) (int64, bool) {
	if ctx == nil {
		return 0, false
	}
	t, ok := ctx.Value(tokenKey{}).(int64)
	return t, ok
}

// Start returns the context of a new hold: it carries parent's values
// (not its cancellation or deadline: parent bounded the wait), the hold
// under key and its token, and ends when the hold does; when the lease is
// lost, with the loss. A Scoped hold ends when parent does, released in
// the background.
//
// A grant whose reply came after its lease had lapsed (the call was held
// up past the lease: a pause, a partition, a busy server) is refused: the
// key may have expired before the reply arrived and let the next holder
// in. What the acquisition wrote is given back, in case it is still there,
// and Start returns ErrLockLost. A Reentry is not given back: the outer
// hold is lost with the lease they share (or was already), and a release
// of one count would renew the key that the outer count keeps; it
// expires on its own.
func Start(parent context.Context, key Key, h *Hold, release ReleaseFunc) (context.Context, error) {
	if err := h.Lease.Check(); err != nil {
		if !h.Reentry {
			giveBack(parent, h, release)
		}
		return nil, fmt.Errorf("%w: the lease of %v lapsed before the grant's reply arrived", errs.ErrLockLost, h.Lease.Timeout())
	}
	h.release = release
	h.parent = parent
	h.key, h.since = key, time.Now()
	if h.Live != nil {
		h.Live.add(h)
	}
	// Before anything that may end the hold (below) can run.
	if t := h.Telemetry; t != nil && t.Metrics.HoldStart(parent) {
		h.metered, h.started = true, h.since
	}
	// Not a child of parent even when Scoped: parentDone ends it, with a
	// cause that says why.
	cctx, cancel := context.WithCancelCause(context.WithoutCancel(parent))
	h.cancel = cancel
	h.ctx = holdCtx{Context: cctx, key: key, h: h}
	// Only End reads stopAfter and lostID, and only the caller that
	// gets h.ctx can reach End, so setting them after arming is safe.
	h.stopAfter = noStop
	if h.Scoped && parent.Done() != nil { // a parent that never ends needs no watch
		h.stopAfter = context.AfterFunc(parent, h.parentDone)
	}
	h.lostID = h.Lease.OnLost((*lossListener)(h))
	return &h.ctx, nil
}

func noStop() bool { return true }

// giveBack releases a refused hold within parent's deadline, if it has
// one, so that the acquisition keeps its bound: a release cut short goes
// on in the background, as any release does.
func giveBack(parent context.Context, h *Hold, release ReleaseFunc) {
	ctx := context.WithoutCancel(parent)
	if d, ok := parent.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, d)
		defer cancel()
	}
	_ = release(ctx, h)
}

// holdCtx carries a hold, its token and its owner: one context for all.
type holdCtx struct {
	context.Context
	key Key
	h   *Hold
}

// Err and Done first ask the lease whether it has lapsed: after a pause
// (SIGSTOP, a stalled VM) the holder may run before the watchdog's
// goroutine does, and must find its hold already ended. Contexts derived
// from this one learn of it when the cancellation reaches them.
func (c *holdCtx) Err() error {
	c.h.checkLease()
	return c.Context.Err()
}

func (c *holdCtx) Done() <-chan struct{} {
	c.h.checkLease()
	return c.Context.Done()
}

// calmCtx is a hold's context without its cancellation, as
// context.WithoutCancel would make it: the release of a hold ended through
// its own context runs on it, since that context is done by then. Unlike
// WithoutCancel's, it is made and asked for values without an allocation.
type calmCtx struct{ c *holdCtx }

func (calmCtx) Deadline() (time.Time, bool) { return time.Time{}, false }
func (calmCtx) Done() <-chan struct{}       { return nil }
func (calmCtx) Err() error                  { return nil }

func (x calmCtx) Value(k any) any {
	v := x.c.Value(k)
	if v == any(x.c.Context) {
		return nil // the cancelCtx's own key: nothing to cancel here
	}
	return v
}

// live reports whether the hold has not ended, a lapsed lease counting as
// ended (see Err).
func (h *Hold) live() bool {
	h.checkLease()
	return h.state.Load() == live
}

// checkLease declares a lapsed lease lost; its OnLost listener (markLost)
// cancels the context before Check returns.
func (h *Hold) checkLease() {
	if h.state.Load() == live {
		// Check runs the loss callbacks itself when it finds the loss;
		// when the watchdog's goroutine found it first, that goroutine
		// may not have run them yet, so the hold ends here too (once).
		if err := h.Lease.Check(); err != nil {
			h.markLost(err)
		}
	}
}

func (c *holdCtx) Value(k any) any {
	switch k := k.(type) {
	case Key:
		if k.Is(c.key) {
			return c.h
		}
	case also:
		// Only re-entry asks this: a member's Unlock or Downgrade must
		// not end the Redlock's hold.
		if slices.ContainsFunc(c.h.Also, k.Key.Is) {
			return c.h
		}
	case tokenKey:
		if c.h.Token == 0 || !c.h.live() {
			return nil
		}
		return c.h.Token
	case holdProbe:
		return c.h
	}
	return c.Context.Value(k)
}

// Live is the set of live holds made through one primitive value. The
// zero Live is ready; a nil *Live tracks nothing.
type Live struct {
	mu    sync.Mutex
	holds map[*Hold]struct{}
}

func (l *Live) add(h *Hold) {
	l.mu.Lock()
	if l.holds == nil {
		l.holds = map[*Hold]struct{}{}
	}
	l.holds[h] = struct{}{}
	l.mu.Unlock()
}

func (l *Live) remove(h *Hold) {
	l.mu.Lock()
	delete(l.holds, h)
	l.mu.Unlock()
}

// notHeld is ErrNotHeld for a release through a context without a hold of
// key; when this process holds key through another context (the parent of
// the hold's, passed by mistake), it says since when.
func (l *Live) notHeld(key Key) error {
	if l == nil {
		return errs.ErrNotHeld
	}
	var oldest time.Time
	n := 0
	l.mu.Lock()
	for h := range l.holds {
		if h.key.Is(key) {
			n++
			if oldest.IsZero() || h.since.Before(oldest) {
				oldest = h.since
			}
		}
	}
	l.mu.Unlock()
	if n == 0 {
		return errs.ErrNotHeld
	}
	return fmt.Errorf("%w through this context, which carries no hold of it; this process holds it through %d other context(s), the oldest acquired %v ago (at %s): pass the context that the acquire returned",
		errs.ErrNotHeld, n, time.Since(oldest).Round(time.Millisecond), oldest.Format(time.RFC3339Nano))
}

// parentDone runs when the acquiring context ends before the hold does.
func (h *Hold) parentDone() {
	if err := h.Lease.Lost(); err != nil {
		h.markLost(err) // parent ended because the hold it came from was lost
		return
	}
	done := make(chan struct{})
	h.bgDone = done // published to End by the state change below
	if h.state.CompareAndSwap(live, abandoned) {
		h.ended(telemetry.Abandoned)
		defer close(done)
		// The cause says why, and still matches context.Canceled.
		h.cancel(fmt.Errorf("%w: the hold of %s %q ended with its acquiring context (%v)",
			context.Canceled, h.key.Kind(), h.key.Name(), context.Cause(h.parent)))
		_ = h.run(context.WithoutCancel(h.parent))
	}
}

// lossListener is a Hold as its lease's Listener, a pointer conversion
// where a method value would be an allocation per hold.
type lossListener Hold

func (ln *lossListener) Lost(err error) { (*Hold)(ln).markLost(err) }

func (h *Hold) markLost(err error) {
	// The loss first: End and Detach read it as soon as the state says
	// lost. The first loss told is the one kept.
	h.lostErr.CompareAndSwap(nil, &err)
	if h.state.CompareAndSwap(live, lost) {
		h.ended(telemetry.Lost)
		h.cancel(*h.lostErr.Load())
	}
}

// run ends the hold's context first (the holder must stop before the lock
// can pass on), then gives the hold back; release runs on its own bounded
// context, so it is not cut short when ctx is the hold's context.
// It is traced as the primitive's release span.
func (h *Hold) run(ctx context.Context) error {
	h.cancel(context.Canceled)
	if ctx == context.Context(&h.ctx) {
		ctx = calmCtx{&h.ctx}
	}
	t := h.Telemetry
	if t == nil || t.Tracer == nil || !h.Traced {
		return h.release(ctx, h)
	}
	ctx, span := t.Tracer.Start(ctx, t.Name, t.Start...)
	defer span.End()
	err := h.release(ctx, h)
	if err != nil && span.IsRecording() {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	return err
}

// ended records the end of a metered hold; the caller made the state
// change from live, so it runs once.
func (h *Hold) ended(e telemetry.End) {
	if h.Live != nil {
		h.Live.remove(h)
	}
	if h.metered {
		h.Telemetry.Metrics.HoldEnd(context.Background(), e, time.Since(h.started))
	}
}

// From returns the hold ctx carries under key.
func From(ctx context.Context, key Key) (*Hold, bool) {
	h, ok := ctx.Value(key).(*Hold)
	return h, ok
}

// End releases the hold ctx carries under key, once. The error is bare
// (the caller names the operation and the lock): ErrNotHeld when there is
// no live hold, the loss (matching ErrLockLost) when it was lost, nil when
// it was already released because its context ended; else what the
// release returned.
func End(ctx context.Context, key Key, holds *Live) error {
	h, ok := From(ctx, key)
	if !ok {
		return holds.notHeld(key)
	}
	if !h.state.CompareAndSwap(live, released) {
		if h.state.CompareAndSwap(abandoned, released) {
			<-h.bgDone // as after any Unlock: released in Redis, no renewal after return
			return nil
		}
		if h.state.Load() == lost {
			return errs.Reason(*h.lostErr.Load())
		}
		return fmt.Errorf("%w: already released", errs.ErrNotHeld)
	}
	h.ended(telemetry.Released)
	h.stopAfter()
	h.Lease.RemoveLost(h.lostID)
	return h.run(ctx)
}

// Detach ends the hold ctx carries under key, as End does, but without
// running its release: the caller gives the hold back to Redis itself (a
// downgrade turns it into another hold in one script) and then calls
// Close. Parent is the context the hold was acquired with.
func Detach(ctx context.Context, key Key, holds *Live) (h *Hold, parent context.Context, err error) {
	h, ok := From(ctx, key)
	if !ok {
		return nil, nil, holds.notHeld(key)
	}
	if !h.state.CompareAndSwap(live, released) {
		if h.state.Load() == lost {
			return nil, nil, errs.Reason(*h.lostErr.Load())
		}
		return nil, nil, fmt.Errorf("%w: already released", errs.ErrNotHeld)
	}
	h.ended(telemetry.Released)
	h.stopAfter()
	h.Lease.RemoveLost(h.lostID)
	return h, h.parent, nil
}

// Close ends a detached hold's context (cause context.Canceled).
func (h *Hold) Close() { h.cancel(context.Canceled) }

// Release runs a detached hold's release after all (its replacement
// failed).
func (h *Hold) Release(ctx context.Context) error { return h.run(ctx) }

// Lease returns the watchdog lease of an acquisition: the owner's existing
// lease, retained, when the acquisition re-entered a hold this process
// tracks, else a new one. A first (not re-entrant) acquisition by an
// owner that still has a lease registered means Redis lost the earlier
// hold before the watchdog noticed: that lease is declared lost. fresh
// reports an owner minted by this acquisition, which has no lease yet.
func Lease(wd *lease.Watchdog, spec lease.Spec, reentrant, fresh bool, sentAt time.Time) *lease.Lease {
	if fresh { // an owner minted by this acquisition has no lease yet
		return wd.Start(spec, sentAt)
	}
	if old := wd.Find(spec.Targets[0].Client, spec.ID); old != nil {
		// The same hold in Redis: a re-entry, or a concurrent acquisition
		// by this owner that Redis ordered after this fresh one (higher token).
		if reentrant || (spec.Token != 0 && old.Token() > spec.Token) {
			if old.RetainAt(sentAt, spec.Token) {
				return old
			}
		} else {
			old.Lose("the key was gone when it was acquired again")
		}
	}
	return wd.Start(spec, sentAt)
}

// Do is every primitive's scoped helper: it acquires, runs fn with the
// hold's context, and releases on every path, a panic in fn included (the
// panic then goes on). It returns fn's error joined with the release's;
// a hold lost during fn is in both: fn sees its context end with
// ErrLockLost, and the release reports it.
func Do(ctx context.Context, acquire func(context.Context) (context.Context, error),
	release func(context.Context) error, fn func(held context.Context) error) (err error) {
	held, err := acquire(ctx)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, release(held)) }()
	return fn(held)
}

// Extend makes the fixed lease of the hold ctx carries under the first of
// keys that it carries end d after now (see lease.Extend), each Redis call
// bounded by timeout. The error is bare (the caller names the operation
// and the lock): ErrNotHeld when ctx carries no live hold,
// ErrInvalidArgument for a d under the shortest lease or over the longest
// (core.MaxLease), a d shorter than what is left, or a hold the
// watchdog renews, the loss when it was lost.
// A hold found lost while its extension was written is given back, so
// that the lock does not stay taken by nobody for d.
func Extend(ctx context.Context, d, timeout time.Duration, keys ...Key) error {
	var h *Hold
	for _, k := range keys {
		if found, ok := From(ctx, k); ok {
			h = found
			break
		}
	}
	switch {
	case h == nil:
		return fmt.Errorf("%w: the context carries no hold of this lock", errs.ErrNotHeld)
	case d < lease.MinLease:
		return fmt.Errorf("%w: lease %v is under %v", errs.ErrInvalidArgument, d, lease.MinLease)
	case d > MaxLease:
		return fmt.Errorf("%w: lease %v is over %v: a crashed holder's keys would outlast the keyspace bound", errs.ErrInvalidArgument, d, MaxLease)
	}
	if h.state.Load() != live {
		if err := h.Lease.Lost(); err != nil {
			return errs.Reason(err)
		}
		return fmt.Errorf("%w: the hold has ended", errs.ErrNotHeld)
	}
	written, err := h.Lease.Extend(ctx, d, timeout)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, lease.ErrRenewed), errors.Is(err, lease.ErrShorter):
		return fmt.Errorf("%w: %w", errs.ErrInvalidArgument, err)
	case errors.Is(err, lease.ErrEnded):
		return fmt.Errorf("%w: %w", errs.ErrNotHeld, err)
	case written && errors.Is(err, errs.ErrLockLost):
		_ = h.Release(context.WithoutCancel(ctx))
	}
	return errs.Reason(err)
}
