package redlock

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/relock-go/relock/internal/core"
	"github.com/relock-go/relock/internal/lease"
	"github.com/relock-go/relock/tracing"
)

// acquisition is one call of Lock or TryLock: what it was given, and what
// its rounds so far came to.
type acquisition struct {
	l    *Lock
	op   string
	once bool            // TryLock: one round
	cfg  *core.Config    // the call's
	ctx  context.Context // the caller's, the hold's parent
	sctx context.Context // ctx in the acquisition's span
	wctx context.Context // sctx bounded by the wait
	// rec records the end on the span (rec.Span, when rec.Recording) and
	// in the metrics (when rec.Measured).
	rec         core.Record
	ownerID     string
	reentry     bool
	lease       time.Duration
	start       time.Time
	attempts    int
	lastErr     error
	lastMembers memberErrors // the members that failed the last round
	// pending: the give-back of a re-entry's failed round, which the next
	// round waits for, as it could undo what that round takes.
	pending <-chan struct{}
}

// acquire is Lock and, once, TryLock: op names the call in errors.
func (l *Lock) acquire(ctx context.Context, op string, once bool, opts []LockOption) (context.Context, error) {
	if err := l.ident().Check(op, ctx, unmade); err != nil {
		return nil, err
	}
	cfg, bad := l.cfg.PerCall(l.primitive(), lockOptions(opts))
	if bad != "" {
		return nil, l.id.Refuse(op, bad)
	}
	// A context that carries an owner (a hold of this Lock, or of a
	// member's other side) acquires as that owner, so that the members
	// count it as a re-entry; any other acquisition takes a new id each
	// round (see round).
	ownerID, reentry := core.OwnerOf(ctx, l.reenter...)
	if !reentry {
		ownerID = core.Mint()
	}
	leaseTime := cfg.Lease()
	tr := core.Trace{Tracer: l.inst.Tracer, Name: tracing.SpanAcquireRedlock, Start: l.inst.SpanStart, Lease: leaseTime, Metrics: l.inst.Metrics}
	sctx, rec := tr.Begin(ctx, ownerID, once, cfg.WaitTimeout)
	defer rec.Span.End()
	start := time.Now()
	wctx := sctx
	if cfg.WaitTimeout > 0 && !once {
		var cancel context.CancelFunc
		wctx, cancel = context.WithTimeoutCause(sctx, cfg.WaitTimeout, core.ErrWaitBound)
		defer cancel()
	}
	a := &acquisition{
		l: l, op: op, once: once, cfg: cfg,
		ctx: ctx, sctx: sctx, wctx: wctx, rec: rec,
		ownerID: ownerID, reentry: reentry, lease: leaseTime, start: start,
	}
	return a.rounds()
}

// rounds makes rounds until one holds the lock, a TryLock's round did
// not, or the wait ends.
func (a *acquisition) rounds() (context.Context, error) {
	for {
		a.attempts++
		if a.pending != nil {
			select {
			case <-a.pending:
			case <-a.wctx.Done():
				return nil, a.ended()
			}
		}
		if held, ok := a.try(a.newRound()); ok {
			return held, nil
		}
		if a.once {
			a.finish(a.lastErr)
			return nil, a.l.id.Wrap(a.op, a.lastErr)
		}
		if !a.backOff() {
			return nil, a.ended()
		}
	}
}

// newRound is the next round, under the caller's owner id for a
// re-entry, else under the first round's or a fresh one.
func (a *acquisition) newRound() *round {
	r := &round{id: a.ownerID, reentry: a.reentry}
	if !a.reentry && a.attempts > 1 {
		r.id = core.Mint()
	}
	return r
}

// try makes round r: the hold's context when it holds the lock, else
// false, with what it took given back and lastErr saying why.
func (a *acquisition) try(r *round) (context.Context, bool) {
	l := a.l
	// The first round is made whatever the wait bound, as a lock's
	// first try is: a bound shorter than a round trip must not refuse
	// free members. Later rounds are bounded by it.
	roundCtx := a.wctx
	if a.attempts == 1 {
		roundCtx = a.sctx
	}
	sentAt := l.cfg.Watchdog.Now()
	began := time.Now()
	outs := l.tryAll(roundCtx, r, a.lease)
	elapsed := time.Since(began)
	won, token, failed := a.count(r, outs)
	validity := a.lease - elapsed - l.drift(a.lease)
	if a.rec.Recording {
		a.rec.Span.SetAttributes(tracing.NodesWon.Int(won), tracing.ValidityMillis.Int64(validity.Milliseconds()))
	}
	if a.rec.Measured {
		l.inst.Metrics.NodesWon(a.sctx, won, won >= l.quorum)
	}
	if won >= l.quorum && validity > 0 {
		held, err := a.startHold(r, outs, won, token, sentAt)
		if err == nil {
			return held, true
		}
		// Lapsed on the watchdog's clock although in validity on this
		// one (a clock step): refused like a used-up validity, and
		// already given back.
		a.lastErr = err
		return nil, false
	}
	a.giveBack(r, outs)
	extra := ""
	if won >= l.quorum {
		extra = fmt.Sprintf("validity time used up: took %v of a %v lease", elapsed, a.lease)
	}
	a.lastErr = l.notAcquired(won, failed, extra)
	a.lastMembers = failed
	return nil, false
}

// count marks in r the members it won, adds each member's outcome to
// the span, and returns how many were won, the largest of their fencing
// tokens and the members that failed.
func (a *acquisition) count(r *round, outs []outcome) (won int, token int64, failed memberErrors) {
	r.won = make([]bool, len(outs))
	for i, o := range outs {
		outcome := OutcomeAcquired
		if o.acquired {
			won++
			r.won[i] = true
			token = max(token, o.token)
		} else {
			failed = append(failed, o.err)
			outcome = o.err.Outcome
		}
		if a.rec.Recording {
			a.rec.Span.AddEvent("member", trace.WithAttributes(attribute.Int("index", i), attribute.String("outcome", outcome)))
		}
	}
	return won, token, failed
}

// startHold makes the hold of round r, which won the quorum within the
// validity time, with the watchdog keeping its won members, and returns
// its context, or ErrLockLost when its lease lapsed before it began.
func (a *acquisition) startHold(r *round, outs []outcome, won int, token int64, sentAt time.Time) (context.Context, error) {
	l := a.l
	if !a.reentry {
		// A member whose reply was lost may hold a grant of this
		// round that nobody counted: its id is the round's alone.
		if which := mayHold(outs); which != nil {
			l.giveBack(a.ctx, r, which)
		}
	}
	targets := make([]lease.Target, 0, won)
	for i, o := range outs {
		if o.acquired {
			targets = append(targets, l.nodes[i].Renewal(r.id))
		}
	}
	wl := l.cfg.Watchdog.Start(lease.Spec{
		Renewer:   targets[0].Renewer,
		Targets:   targets,
		Quorum:    l.quorum,
		Timeout:   a.lease,
		Renew:     a.cfg.Renewed(),
		Name:      l.id.Name,
		Primitive: l.primitive(),
	}, sentAt)
	// A round refused by Start is given back by l.release, which waits
	// for the members as an Unlock does.
	held, err := core.Start(a.ctx, l.key(), &core.Hold{Owner: r.id, Token: token, Lease: wl, Taken: r, Telemetry: l.inst.Release, Traced: a.rec.Recording, Scoped: a.cfg.ScopedHold, Also: l.memberKeys, Live: &l.holds}, l.release)
	if err != nil {
		return nil, err
	}
	// A lost hold gives back what survives of it at once.
	wl.OnLost(lease.LostFunc(func(error) { l.releaseLost(r) }))
	if a.rec.Recording {
		a.rec.Span.SetAttributes(tracing.FencingToken.Int64(token))
	}
	a.finish(nil)
	return held, nil
}

// giveBack gives back what round r took when it did not hold the lock.
// The members won answered a moment ago, so the call waits for their
// give-back (bounded by the node timeout): once it returns, another
// process's try of one of them does not fail for nothing. Those whose
// reply may have been lost after they took it are given back in the
// background (the attempts left behind give back their own). A re-entry
// gives back only the members it counted on, and its next round waits
// for that too.
func (a *acquisition) giveBack(r *round, outs []outcome) {
	if !a.reentry {
		if which := mayHold(outs); which != nil {
			a.l.giveBack(a.ctx, r, which)
		}
	}
	a.pending = a.l.giveBack(a.ctx, r, r.won)
	waitUpTo(a.pending, a.l.nodeTimeout(a.lease))
	if !a.reentry {
		a.pending = nil // a fresh round's id is its own: nothing to wait for
	}
}

// backOff waits a random delay before the next round, within the wait
// bound: false when the wait ended first.
func (a *acquisition) backOff() bool {
	delay := time.Duration(rand.Int64N(int64(max(a.l.nodeTimeout(a.lease), 10*time.Millisecond)))) + time.Millisecond
	t := time.NewTimer(delay)
	select {
	case <-t.C:
		return true
	case <-a.wctx.Done():
		t.Stop()
		return false
	}
}

// finish records the acquisition's end with err (nil: held).
func (a *acquisition) finish(err error) {
	a.rec.End(a.sctx, err, a.attempts, time.Since(a.start))
}

// ended returns the error of a wait that wctx ended.
func (a *acquisition) ended() error {
	cause := context.Cause(a.wctx)
	if a.lastErr == nil {
		a.lastErr = ErrNotAcquired
	}
	if errors.Is(cause, core.ErrWaitBound) {
		a.finish(a.lastErr)
		return a.l.id.Wrap(a.op, a.lastErr)
	}
	a.finish(cause)
	if a.lastMembers.endedBy(a.wctx) { // the cause, once: not again per member
		return a.l.id.Wrap(a.op, cause)
	}
	return a.l.id.Wrap(a.op, fmt.Errorf("%w (last attempt: %w)", cause, a.lastErr))
}
