package core

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/relock-go/relock/internal/clock"
	"github.com/relock-go/relock/internal/conn"
)

// Call is one try of a primitive: its script and what follows it on the
// same server (a WAIT, a give-back for want of replicas), returning what
// the primitive reads of the reply.
type Call[T any] interface {
	Send(ctx context.Context) (T, error)
}

// CallFunc is a function that makes one try, as a Call.
type CallFunc[T any] func(ctx context.Context) (T, error)

// Send calls f.
func (f CallFunc[T]) Send(ctx context.Context) (T, error) { return f(ctx) }

// Bounded runs one try so that it returns when ctx ends, whatever the
// client does meanwhile (go-redis ignores context deadlines unless told,
// and retries on its own): a ctx that can end has the try run on pool, and
// a try still unanswered when ctx ends returns a *conn.LateError while
// it goes on in the background (what it may take must be given back after
// it: conn.AfterLate). A reply that says to try again (conn.TryAgain:
// BUSY, LOADING...) is sent again, after a backoff, for up to patience or
// until ctx ends; an acquisition's first try, which runs under its
// caller's ctx, is sent again until its wait bound instead (Do), and
// returns the last answer at that bound. A ctx that cannot end runs the
// try on the caller's goroutine, as the uncontended path of
// context.Background does. A try on its way when the wait bound
// (ErrWaitBound) passes has up to patience more to answer: the bound
// limits waiting, and a healthy server's answer is kept rather than given
// back.
func Bounded[T any](ctx context.Context, pool *conn.Pool, patience time.Duration, t Call[T]) (v T, err error) {
	var until time.Time
	var atBound bool // until is a first try's wait bound
	var bo backoff
	var again error // the last answer that said to try again
	for {
		if ctx.Done() == nil {
			v, err = t.Send(ctx)
		} else {
			v, err = onPool(ctx, pool, patience, t)
		}
		if again != nil && ctx.Err() != nil && isContextErr(err) {
			// A late try's error is kept inside (conn.AfterLate): what
			// it may take is given back once it lands.
			return v, &resent{err: err, answer: again}
		}
		if !conn.TryAgain(err) {
			return v, err
		}
		again = err
		if until.IsZero() {
			until, atBound = resendUntil(ctx, time.Now().Add(patience))
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

// resent is a resend that met the end of its context, with the server's
// last answer before it, which says why the call waited. It unwraps to
// the context's error alone, or to the *conn.LateError of a resend still
// on its way: the resend may have run (conn.MayHaveRun), and what it
// took is given back, after it lands when it is late.
type resent struct{ err, answer error }

func (e *resent) Error() string {
	return fmt.Sprintf("%v (the server last answered: %v)", e.err, e.answer)
}

func (e *resent) Unwrap() error { return e.err }

// resendKey carries the wait bound of an acquisition's first try, which
// runs under its caller's context alone (Do): Bounded resends it until
// then.
type resendKey struct{}

// resendUntil is the instant past which Bounded sends a try no more: at
// patience, or at the wait bound of a first try (atBound), sooner or
// later: the caller asked to wait that long.
func resendUntil(ctx context.Context, patience time.Time) (until time.Time, atBound bool) {
	if b, ok := ctx.Value(resendKey{}).(time.Time); ok {
		return b, true
	}
	return patience, false
}

// isContextErr reports a call that failed for the end of its context,
// late or not.
func isContextErr(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)
}

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
	// The wait bound limits waiting, not a try on its way: that one has
	// up to patience more to answer, as a release would.
	if errors.Is(late, ErrWaitBound) && waitUpTo(conn.AfterLate(late), patience) {
		return out.v, out.err // written before the try returned
	}
	var zero T
	return zero, late
}

// waitUpTo reports whether done closed within d.
func waitUpTo(done <-chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	}
}
