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

// Key names one primitive (and side) in a context: one pointer made once
// (NewKey), so a lookup allocates nothing. Keys made apart from equal
// fields name the same primitive (Is).
type Key struct{ f *keyFields }

type keyFields struct {
	client conn.Client
	kind   string // "lock", "rlock", "wlock", "semaphore", ...
	name   string
	id     string // tells apart values whose name alone is not the lock (a Redlock)
}

// NewKey returns the Key of the primitive of kind called name on client.
func NewKey(client Client, kind, name, id string) Key {
	return Key{&keyFields{client: client.Client, kind: kind, name: name, id: id}}
}

// Is reports whether k and o name the same primitive.
func (k Key) Is(o Key) bool { return k.f != nil && o.f != nil && (k.f == o.f || *k.f == *o.f) }

// Kind is the primitive's kind, as NewKey was given it.
func (k Key) Kind() string { return k.f.kind }

// Name is the primitive's name.
func (k Key) Name() string { return k.f.name }

// Client is the primitive's client (zero for a Key not made by NewKey).
func (k Key) Client() conn.Client {
	if k.f == nil {
		return conn.Client{}
	}
	return k.f.client
}

// ReleaseFunc gives a hold back to Redis, once per hold: from Unlock, or
// in the background when a Scoped hold's acquiring context ended.
type ReleaseFunc func(ctx context.Context, h *Hold) error

// Hold is one acquisition.
type Hold struct {
	Owner string
	Token int64
	Lease *lease.Lease
	// Taken is what the release needs of the acquisition: a semaphore's
	// permit id, a Redlock's round.
	Taken any
	// Telemetry, when set, is the primitive's release span and hold metrics.
	Telemetry *telemetry.Release
	Traced    bool // the acquire span recorded: trace the release too
	// Scoped: the hold ends with its acquiring context, released in the
	// background (WithHoldScopedToContext).
	Scoped bool
	// Also are other keys this hold answers for: a Redlock's hold is one
	// of each member too, so that a member re-enters on it.
	Also []Key
	// Live, when set, is the primitive value's live holds (see notHeld).
	Live *Live
	// Reentry: the acquisition added a count to its owner's existing hold.
	Reentry bool

	key   Key
	since time.Time

	metered   bool // the start was recorded: record the end
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

// Token returns the fencing token of ctx's innermost hold; false when that
// hold has ended (fencing would refuse it) or has none (a semaphore's).
func Token(ctx context.Context) (int64, bool) {
	if ctx == nil {
		return 0, false
	}
	t, ok := ctx.Value(tokenKey{}).(int64)
	return t, ok
}

// Start returns the context of a new hold: parent's values (not its
// cancellation or deadline), the hold under key and its token; it ends
// with the hold, with the loss if the lease is lost (a Scoped hold with
// parent). A grant whose reply came after its lease lapsed is refused with
// ErrLockLost (the next holder may be in); what it wrote is given back,
// bar a Reentry's, whose release would renew the outer hold's key.
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
	// Before anything below can end the hold.
	h.metered = h.Telemetry != nil && h.Telemetry.Metrics.HoldStart(parent)
	// Not a child of parent even when Scoped: parentDone ends it, with a cause.
	cctx, cancel := context.WithCancelCause(context.WithoutCancel(parent))
	h.cancel = cancel
	h.ctx = holdCtx{Context: cctx, h: h}
	// Only End reads stopAfter and lostID, and only h.ctx's holder can call
	// End: setting them after arming is safe.
	h.stopAfter = noStop
	if h.Scoped && parent.Done() != nil { // a parent that never ends needs no watch
		h.stopAfter = context.AfterFunc(parent, h.parentDone)
	}
	h.lostID = h.Lease.OnLost((*lossListener)(h))
	return &h.ctx, nil
}

func noStop() bool { return true }

// giveBack releases a refused hold within parent's deadline, if any, so the
// acquisition keeps its bound; a release cut short goes on in the background.
func giveBack(parent context.Context, h *Hold, release ReleaseFunc) {
	ctx := context.WithoutCancel(parent)
	if d, ok := parent.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, d)
		defer cancel()
	}
	_ = release(ctx, h)
}

// holdCtx carries a hold, its token and its owner in one context.
type holdCtx struct {
	context.Context
	h *Hold
}

// Err and Done first ask the lease whether it lapsed: after a pause (SIGSTOP,
// a stalled VM) the holder may run before the watchdog and must find it ended.
func (c *holdCtx) Err() error {
	c.h.checkLease()
	return c.Context.Err()
}

func (c *holdCtx) Done() <-chan struct{} {
	c.h.checkLease()
	return c.Context.Done()
}

// calmCtx is context.WithoutCancel of a hold's context, allocation-free: a
// release through the hold's own (by then done) context runs on it.
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

// live reports whether the hold has not ended, a lapsed lease counting as ended.
func (h *Hold) live() bool {
	h.checkLease()
	return h.state.Load() == live
}

// checkLease declares a lapsed lease lost, cancelling the context.
func (h *Hold) checkLease() {
	switch h.state.Load() {
	case live:
		// The watchdog may have found the loss first without running the
		// callbacks yet: end the hold here too (markLost runs once).
		if err := h.Lease.Check(); err != nil {
			h.markLost(err)
		}
	case lost:
		// Another goroutine's markLost records the end, then cancels: wait
		// the moment for it, so that a lost hold never reads as live.
		<-h.ctx.Context.Done()
	}
}

func (c *holdCtx) Value(k any) any {
	switch k := k.(type) {
	case Key:
		if k.Is(c.h.key) {
			return c.h
		}
	case also:
		// Only re-entry asks: a member's Unlock or Downgrade must not end the Redlock's.
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

// notHeld is ErrNotHeld for a context without a hold of key, saying since
// when another context holds it (the hold's parent, passed by mistake).
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
		h.markLost(err) // parent ended with the hold it came from
		return
	}
	done := make(chan struct{})
	h.bgDone = done // published to End by the state change below
	if h.state.CompareAndSwap(live, abandoned) {
		h.ended(telemetry.Abandoned)
		defer close(done)
		h.cancel(fmt.Errorf("%w: the hold of %s %q ended with its acquiring context (%v)",
			context.Canceled, h.key.Kind(), h.key.Name(), context.Cause(h.parent)))
		_ = h.run(context.WithoutCancel(h.parent))
	}
}

// lossListener is a Hold as its lease's Listener: a conversion, where a
// method value would allocate per hold.
type lossListener Hold

func (ln *lossListener) Lost(err error) { (*Hold)(ln).markLost(err) }

func (h *Hold) markLost(err error) {
	// The loss first: End and Detach read it once the state says lost.
	h.lostErr.CompareAndSwap(nil, &err)
	if h.state.CompareAndSwap(live, lost) {
		h.ended(telemetry.Lost)
		h.cancel(*h.lostErr.Load())
	}
}

// run ends the hold's context first (the holder must stop before the lock
// passes on), then runs the traced release, on calmCtx if ctx is the hold's.
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

// ended records the end of a hold, once: the caller moved it from live.
func (h *Hold) ended(e telemetry.End) {
	if h.Live != nil {
		h.Live.remove(h)
	}
	if h.metered {
		h.Telemetry.Metrics.HoldEnd(context.Background(), e, time.Since(h.since))
	}
}

// From returns the hold ctx carries under key.
func From(ctx context.Context, key Key) (*Hold, bool) {
	h, ok := ctx.Value(key).(*Hold)
	return h, ok
}

// End releases the hold ctx carries under key, once. The error is bare
// (the caller names the operation and lock): ErrNotHeld without a live
// hold, the loss (matching ErrLockLost), nil when released already because
// its context ended; else the release's.
func End(ctx context.Context, key Key, holds *Live) error {
	h, err := endLive(ctx, key, holds, true)
	if h == nil {
		return err
	}
	return h.run(ctx)
}

// Detach ends the hold ctx carries under key as End does but without its
// release, which the caller does itself (a downgrade turns it into another
// hold in one script) before Close. parent is the acquiring context.
func Detach(ctx context.Context, key Key, holds *Live) (h *Hold, parent context.Context, err error) {
	if h, err = endLive(ctx, key, holds, false); h == nil {
		return nil, nil, err
	}
	return h, h.parent, nil
}

// endLive ends ctx's live hold under key for End and Detach, returning it
// to be released; else nil with End's error. Only End (waitAbandoned) takes
// over an abandoned hold, once its background release has returned.
func endLive(ctx context.Context, key Key, holds *Live, waitAbandoned bool) (*Hold, error) {
	h, ok := From(ctx, key)
	switch {
	case !ok:
		return nil, holds.notHeld(key)
	case h.state.CompareAndSwap(live, released):
		h.ended(telemetry.Released)
		h.stopAfter()
		h.Lease.RemoveLost(h.lostID)
		return h, nil
	case waitAbandoned && h.state.CompareAndSwap(abandoned, released):
		<-h.bgDone // as after any Unlock: released, no renewal after return
		return nil, nil
	case h.state.Load() == lost:
		return nil, errs.Reason(*h.lostErr.Load())
	}
	return nil, fmt.Errorf("%w: already released", errs.ErrNotHeld)
}

// Close ends a detached hold's context (cause context.Canceled).
func (h *Hold) Close() { h.cancel(context.Canceled) }

// Release runs a detached hold's release after all (its replacement failed).
func (h *Hold) Release(ctx context.Context) error { return h.run(ctx) }

// Lease returns an acquisition's watchdog lease: the owner's, retained, on
// a re-entry, else a new one (fresh: a just-minted owner). An owner's
// lease still registered at a first acquisition is declared lost: Redis
// lost that hold unnoticed.
func Lease(wd *lease.Watchdog, spec lease.Spec, reentrant, fresh bool, sentAt time.Time) *lease.Lease {
	if fresh {
		return wd.Start(spec, sentAt)
	}
	if old := wd.Find(spec.Targets[0].Client, spec.ID); old != nil {
		// The same hold in Redis: a re-entry, or this owner's concurrent
		// acquisition that Redis ordered after this one (higher token).
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
// hold's context and releases on every path, a panic included (which goes
// on). It returns fn's error joined with the release's.
func Do(ctx context.Context, acquire func(context.Context) (context.Context, error),
	release func(context.Context) error, fn func(held context.Context) error) (err error) {
	held, err := acquire(ctx)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, release(held)) }()
	return fn(held)
}

// Extend makes the fixed lease of ctx's hold under the first of keys end d
// after now (lease.Extend), each call bounded by timeout and the whole
// returning within it (c.Within). The error is
// bare: ErrNotHeld, ErrInvalidArgument (d outside [MinLease, MaxLease] or
// under what is left, a renewed hold), or the loss. A hold found lost as
// its extension was written is given back, lest nobody hold it for d.
func Extend(ctx context.Context, c Client, d, timeout time.Duration, keys ...Key) error {
	return c.Within(ctx, timeout, func(ctx context.Context) error {
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
	})
}
