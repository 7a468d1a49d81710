package core

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/relock-go/relock/internal/clock"
	"github.com/relock-go/relock/internal/conn"
)

// Call is one try of a primitive: its script and what follows on the same
// server (a WAIT, a give-back for want of replicas).
type Call[T any] interface {
	Send(ctx context.Context) (T, error)
}

// CallFunc is a function that makes one try, as a Call.
type CallFunc[T any] func(ctx context.Context) (T, error)

// Send calls f.
func (f CallFunc[T]) Send(ctx context.Context) (T, error) { return f(ctx) }

// Bounded runs one try so that it returns when ctx ends, whatever go-redis
// does (it ignores deadlines unless told, and retries): on c's workers if
// ctx can end, else inline; a try unanswered then returns an error Lost
// reports late, and goes on (give back what it takes after it). A try-again
// reply (conn.TryAgain: BUSY, LOADING...) is resent after a backoff for up
// to patience, or to a first try's wait bound (Acquire). A try on its way
// when the wait bound passes has patience more, so a healthy server's
// answer is kept rather than given back.
func Bounded[T any](ctx context.Context, c Client, patience time.Duration, t Call[T]) (v T, err error) {
	var until time.Time
	var atBound bool // until is a first try's wait bound
	var bo backoff
	var again error // the last answer that said to try again
	for {
		if ctx.Done() == nil {
			v, err = t.Send(ctx)
		} else {
			v, err = onPool(ctx, c.workers, patience, t)
		}
		if again != nil && ctx.Err() != nil && (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)) {
			// Failed by the end of ctx, late or not: a late try's error
			// stays inside, for conn.AfterLate.
			return v, &resent{err: err, answer: again}
		}
		if !conn.TryAgain(err) {
			return v, err
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
			return v, err
		}
		if !clock.Sleep(ctx, d) {
			return v, err
		}
	}
}

// resent is a resend ended by its context, with the server's last answer,
// which says why it waited. It unwraps to the context's error alone, or to
// a late resend's *conn.LateError (it may have run: conn.MayHaveRun).
type resent struct{ err, answer error }

func (e *resent) Error() string {
	return fmt.Sprintf("%v (the server last answered: %v)", e.err, e.answer)
}

func (e *resent) Unwrap() error { return e.err }

// resendKey carries the wait bound of an acquisition's first try, which
// runs under the caller's context alone: Bounded resends it until then.
type resendKey struct{}

// onPool runs one try of Bounded on pool.
func onPool[T any](ctx context.Context, pool *conn.Pool, patience time.Duration, t Call[T]) (T, error) {
	var out struct {
		v   T
		err error
	}
	late := pool.Bound(ctx, 0, func() { out.v, out.err = t.Send(ctx) })
	if late == nil {
		return out.v, out.err
	}
	// The wait bound limits waiting, not a try on its way (see Bounded):
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
	var zero T
	return zero, late
}
