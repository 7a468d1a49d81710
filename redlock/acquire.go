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

// acquisition is one call of Lock or TryLock and what its rounds came to.
type acquisition struct {
	l    *Lock
	op   string
	once bool            // TryLock: one round
	cfg  *core.Config    // the call's
	ctx  context.Context // the caller's, the hold's parent
	sctx context.Context // ctx in the acquisition's span
	wctx context.Context // sctx bounded by the wait
	// rec records the end on the span and in the metrics.
	rec         core.Record
	ownerID     string
	reentry     bool
	lease       time.Duration
	start       time.Time
	attempts    int
	lastErr     error
	lastMembers memberErrors // the members that failed the last round
	// pending: a re-entry's give-back, awaited by the next round, which it could undo.
	pending <-chan struct{}
}

// acquire is Lock and, once, TryLock: op names the call in errors.
func (l *Lock) acquire(ctx context.Context, op string, once bool, opts []LockOption) (context.Context, error) {
	if err := l.ident().Check(op, ctx, unmade); err != nil {
		return nil, err
	}
	cfg, bad := l.cfg.PerCall(l.id.Primitive, core.Options(opts, LockOption.lockOption))
	if bad != "" {
		return nil, l.id.Refuse(op, bad)
	}
	a := &acquisition{l: l, op: op, once: once, cfg: cfg, ctx: ctx, lease: cfg.Lease()}
	// A re-entry acquires as the owner ctx carries; others mint an id per round.
	if a.ownerID, a.reentry = core.OwnerOf(ctx, l.reenter...); !a.reentry {
		a.ownerID = core.Mint()
	}
	tr := core.Trace{Tracer: l.inst.Tracer, Name: tracing.SpanAcquireRedlock, Start: l.inst.SpanStart, Lease: a.lease, Metrics: l.inst.Metrics}
	a.sctx, a.rec = tr.Begin(ctx, a.ownerID, once, cfg.WaitTimeout)
	defer a.rec.Span.End()
	a.start, a.wctx = time.Now(), a.sctx
	if cfg.WaitTimeout > 0 && !once {
		var cancel context.CancelFunc
		a.wctx, cancel = context.WithTimeoutCause(a.sctx, cfg.WaitTimeout, core.ErrWaitBound)
		defer cancel()
	}
	return a.rounds()
}

// rounds makes rounds until one holds, a TryLock's round fails, or the wait ends.
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
		// The re-entry's owner id, the first round's, or a fresh one.
		r := &round{id: a.ownerID, reentry: a.reentry}
		if !a.reentry && a.attempts > 1 {
			r.id = core.Mint()
		}
		if held, ok := a.try(r); ok {
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

// try makes round r: the hold's context when it holds the lock, else
// false, with what it took given back and lastErr saying why.
func (a *acquisition) try(r *round) (context.Context, bool) {
	l := a.l
	// The first round ignores the wait bound, as a lock's first try does:
	// a bound shorter than a round trip must not refuse free members.
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
		// Lapsed on the watchdog's clock though valid on this one (a clock
		// step): refused like a used-up validity, already given back.
		a.lastErr = err
		return nil, false
	}
	a.giveBack(r, outs)
	msg := fmt.Sprintf("won %d of %d members, quorum %d", won, len(l.nodes), l.quorum)
	if won >= l.quorum {
		msg += fmt.Sprintf(", validity time used up: took %v of a %v lease", elapsed, a.lease)
	}
	a.lastMembers = failed
	if len(failed) == 0 {
		a.lastErr = fmt.Errorf("%w: %s", ErrNotAcquired, msg)
	} else {
		a.lastErr = fmt.Errorf("%w: %s: %w", ErrNotAcquired, msg, failed)
	}
	return nil, false
}

// count marks r's won members, adds outcomes to the span, and tallies them.
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

// startHold makes round r's hold, its won members kept by the watchdog,
// or returns ErrLockLost when its lease lapsed before it began.
func (a *acquisition) startHold(r *round, outs []outcome, won int, token int64, sentAt time.Time) (context.Context, error) {
	l := a.l
	// A member whose reply was lost may hold an uncounted grant of this round.
	l.giveBack(a.ctx, r, r.mayHold(outs))
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
		Primitive: l.id.Primitive,
	}, sentAt)
	// A round refused by Start is given back by l.release, as an Unlock.
	held, err := core.Start(a.ctx, l.key(), &core.Hold{Owner: r.id, Token: token, Lease: wl, Taken: r, Telemetry: l.inst.Release, Traced: a.rec.Recording, Scoped: a.cfg.ScopedHold, Also: l.memberKeys, Live: &l.holds}, l.release)
	if err != nil {
		return nil, err
	}
	// A lost hold gives back what survives of it at once, in the background:
	// this runs on the goroutine that found the loss.
	wl.OnLost(lease.LostFunc(func(error) {
		if r.ended.CompareAndSwap(false, true) {
			l.giveBack(context.Background(), r, r.won)
		}
	}))
	if a.rec.Recording {
		a.rec.Span.SetAttributes(tracing.FencingToken.Int64(token))
	}
	a.finish(nil)
	return held, nil
}

// giveBack gives back what a failed round r took, waiting up to the node
// timeout for the members won so that another process's try of them does
// not fail for nothing. A re-entry gives back only what it counted on.
func (a *acquisition) giveBack(r *round, outs []outcome) {
	a.l.giveBack(a.ctx, r, r.mayHold(outs))
	a.pending = a.l.giveBack(a.ctx, r, r.won)
	t := time.NewTimer(a.l.nodeTimeout(a.lease))
	select {
	case <-a.pending:
	case <-t.C:
	}
	t.Stop()
	if !a.reentry {
		a.pending = nil // a fresh round's id is its own: nothing to wait for
	}
}

// backOff waits a random delay before the next round: false when the wait ended first.
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
