package core

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/relock-go/relock/internal/clock"
	"github.com/relock-go/relock/internal/conn"
)

// try makes one try of the attempt and has it read the reply (Took). The
// try returns when ctx ends, whatever go-redis does (it ignores deadlines
// unless told, and retries): inline when ctx cannot end or the connection
// ends it at ctx's deadline (run.inline), else on the client's workers,
// where a try unanswered when ctx ends is an error Lost reports late and
// goes on (the attempt gives back what it takes after it). A try-again
// reply (conn.TryAgain: BUSY, LOADING...) is resent after a backoff for
// up to Patience, or to a first try's wait bound (Acquire). A try on its
// way when the wait bound passes has Patience more, so a healthy server's
// answer is kept rather than given back. Send is called here, not in a
// helper, so that the common try is no deeper than it must be.
func (r *run) try(ctx context.Context, atHead bool) (Result, error) {
	a, patience := r.req.Attempt, r.req.Patience
	if ctx.Err() != nil {
		// The caller left before this try was sent (its wait ended as it
		// was woken): sent now, it would take or mark for nobody.
		return Result{}, context.Cause(ctx)
	}
	r.attempts++ // a try sent, as the span counts them
	sent := r.now()
	var rep Reply
	var err error
	var until time.Time
	var atBound bool // until is a first try's wait bound
	var bo backoff
	var again error // the last answer that said to try again
	for {
		if ctx.Done() == nil {
			rep, err = a.Send(ctx, atHead)
		} else if sctx, cancel := r.inline(ctx, patience); sctx != nil {
			rep, err = a.Send(sctx, atHead)
			cancel()
		} else {
			rep, err = onPool(ctx, r.req.Client.workers, patience, a, atHead)
		}
		if again != nil && ctx.Err() != nil && (conn.Timeout(err) || errors.Is(err, context.Canceled)) {
			// Failed by the end of ctx, late or not: a late try's error
			// stays inside, for conn.AfterLate.
			err = &resent{err: err, answer: again}
			break
		}
		if !conn.TryAgain(err) {
			break
		}
		again = err
		if until.IsZero() { // patience, or a first try's wait bound, sooner or later
			if until, atBound = ctx.Value(resendKey{}).(time.Time); !atBound {
				until = time.Now().Add(patience)
			}
		}
		d := bo.next()
		if rest := time.Until(until); rest < d {
			if atBound {
				clock.Sleep(ctx, rest) // the caller was promised the bound, not less
			}
			break
		}
		if !clock.Sleep(ctx, d) {
			break
		}
	}
	rep.SentAt = sent
	return a.Took(ctx, rep, err, atHead)
}

// inline is the context a try is sent under on the caller's goroutine
// (nil: on the workers), where the connection ends it at ctx's deadline,
// or at the wait bound's plus patience (see run.try). A caller that may
// cancel without a deadline of its own keeps a worker.
func (r *run) inline(ctx context.Context, patience time.Duration) (context.Context, context.CancelFunc) {
	own, ok := r.sctx.Deadline()
	if (!ok && r.sctx.Done() != nil) || !r.req.Client.workers.Inline(ctx) {
		return nil, nil
	}
	if dl, _ := ctx.Deadline(); r.deadline.IsZero() || !dl.Equal(r.deadline) {
		return ctx, func() {}
	}
	limit := r.deadline.Add(patience)
	if ok && own.Before(limit) {
		limit = own
	}
	return context.WithDeadline(context.WithoutCancel(ctx), limit)
}

// now is the time on the attempt's clock (Request.Watchdog).
func (r *run) now() time.Time {
	if w := r.req.Watchdog; w != nil {
		return w.Now()
	}
	return time.Now()
}

// resent is a resend ended by its context, with the server's last answer,
// which says why it waited. It unwraps to the resend's error: the
// context's, a network timeout at its deadline, or a late resend's
// *conn.LateError (it may have run: conn.MayHaveRun).
type resent struct{ err, answer error }

func (e *resent) Error() string {
	return fmt.Sprintf("%v (the server last answered: %v)", e.err, e.answer)
}

func (e *resent) Unwrap() error { return e.err }

// resendKey carries the wait bound of an acquisition's first try, which
// runs under the caller's context alone: run.try resends it until then.
type resendKey struct{}

// onPool runs one Send of run.try on pool.
func onPool(ctx context.Context, pool *conn.Pool, patience time.Duration, a Attempt, atHead bool) (Reply, error) {
	var out struct {
		v   Reply
		err error
	}
	late := pool.Bound(ctx, 0, func() { out.v, out.err = a.Send(ctx, atHead) })
	if late == nil {
		return out.v, out.err
	}
	// The wait bound limits waiting, not a try on its way (see run.try):
	// it has patience more.
	if errors.Is(late, ErrWaitBound) {
		t := time.NewTimer(patience)
		defer t.Stop()
		select {
		case <-conn.AfterLate(late):
			return out.v, out.err // written before the try returned
		case <-t.C:
		}
	}
	return Reply{}, late
}
