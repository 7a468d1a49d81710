package conn

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// A call to Redis may take far longer than its caller may wait: go-redis
// ignores context deadlines unless ContextTimeoutEnabled, and retries on its
// own, so a stalled server holds a call for its read timeout times its
// retries. Bound keeps the caller's promise whatever the client does: the
// call runs on a worker, the caller waits for it only as long as it may,
// and a call that outlives its caller finishes in the background.

// ErrLate is the cause of a call that did not return within its own bound
// (as opposed to its caller's context).
var ErrLate = errors.New("no reply in time")

// LateError reports a call that its caller stopped waiting for: it goes on
// in the background. It matches its cause (the caller context's, or
// ErrLate wrapping context.DeadlineExceeded) with errors.Is.
type LateError struct {
	cause error
	done  <-chan struct{}
}

// Error says what the caller stopped waiting for, and that it goes on.
func (e *LateError) Error() string {
	return fmt.Sprintf("%v (the call goes on in the background)", e.cause)
}

// Unwrap returns the cause: the caller context's, or ErrLate.
func (e *LateError) Unwrap() error { return e.cause }

// Done is closed when the call has returned.
func (e *LateError) Done() <-chan struct{} { return e.done }

// AfterLate returns a channel closed once the late call err reports (if
// it does) has returned: work that must follow that call (a give-back of
// what it may take) waits for it. Nil when err reports no late call.
func AfterLate(err error) <-chan struct{} {
	if err == nil {
		return nil // before late, which escapes: no allocation on success
	}
	var late *LateError
	if errors.As(err, &late) {
		return late.done
	}
	return nil
}

// flight is one call run by Bound, reused through flights: a call that
// returned in time puts it back; a late one is left to the collector.
type flight struct {
	f     func()
	run   func() // fl.exec, taken once: a method value allocates
	done  chan struct{}
	timer *time.Timer
	// state: running, then returned (its caller was waiting) or late
	// (its caller left; gone is closed when f returns).
	state atomic.Int32
	gone  chan struct{}
}

const (
	running int32 = iota
	returned
	late
)

var flights = sync.Pool{New: func() any {
	fl := &flight{done: make(chan struct{}, 1)}
	fl.run = fl.exec
	return fl
}}

func (fl *flight) exec() {
	fl.f()
	if fl.state.CompareAndSwap(running, returned) {
		fl.done <- struct{}{}
		return
	}
	close(fl.gone)
}

// Bound runs f and waits until it returns, ctx ends or d passes (d <= 0:
// no bound of its own). It returns nil once f has returned. Otherwise it
// returns a *LateError whose cause is ctx's (context.Cause) or ErrLate,
// and f goes on in the background: the caller must not touch what f
// writes. A call that nothing can cut short (ctx that never ends, no d)
// runs on the caller's goroutine, as does every call of a nil Pool.
func (p *Pool) Bound(ctx context.Context, d time.Duration, f func()) error {
	stop := ctx.Done()
	if p == nil || (stop == nil && d <= 0) {
		f()
		return nil
	}
	fl := flights.Get().(*flight)
	fl.f = f
	fl.state.Store(running)
	var fire <-chan time.Time
	if d > 0 {
		if fl.timer == nil {
			fl.timer = time.NewTimer(d)
		} else {
			fl.timer.Reset(d)
		}
		fire = fl.timer.C
	}
	p.Go(fl.run)
	var cause error
	select {
	case <-fl.done:
	case <-stop:
		cause = context.Cause(ctx)
	case <-fire:
		cause = fmt.Errorf("%w: %w after %v", ErrLate, context.DeadlineExceeded, d)
	}
	if fl.timer != nil {
		fl.timer.Stop()
	}
	if cause != nil {
		gone := make(chan struct{})
		fl.gone = gone
		if fl.state.CompareAndSwap(running, late) {
			return &LateError{cause: cause, done: gone}
		}
		<-fl.done // it returned meanwhile
	}
	fl.f, fl.gone = nil, nil
	flights.Put(fl)
	return nil
}

// CallerWait is what a call on a timeout of its own (a release, an
// inspection) waits for, given its caller's ctx: until timeout, or until
// ctx's deadline when that is sooner and still ahead; and until ctx ends,
// unless it has ended already. A ctx that has ended (a hold's context once
// the release began, a request that was cancelled) does not cut the call
// short: it needs only ctx's values, and stop carries them.
func CallerWait(ctx context.Context, timeout time.Duration) (stop context.Context, d time.Duration) {
	d = timeout
	if dl, ok := ctx.Deadline(); ok {
		if left := time.Until(dl); left > 0 {
			d = min(d, left)
		}
	}
	if ctx.Err() != nil {
		return context.WithoutCancel(ctx), d
	}
	return ctx, d
}

type detachedKey struct{}

// Detached returns ctx's values without its cancellation, marked as the
// context of work that nobody waits for but its own (a give-back, a
// Redlock member's release): a call on its own timeout made with it is
// waited for to its end, so that the work, and what waits for it (Drain,
// a give-back's next try), ends when the call does.
func Detached(ctx context.Context) context.Context {
	if IsDetached(ctx) {
		return ctx
	}
	return context.WithValue(context.WithoutCancel(ctx), detachedKey{}, true)
}

// IsDetached reports whether ctx was made by Detached.
func IsDetached(ctx context.Context) bool {
	d, _ := ctx.Value(detachedKey{}).(bool)
	return d
}

// Within runs call, which reads or writes Redis, so that it returns
// within timeout, or ctx's deadline when sooner (CallerWait), whatever the
// client does meanwhile (go-redis ignores context deadlines unless told,
// and retries on its own): a call still unanswered then goes on in the
// background on pool and Within returns a *LateError. What call
// writes must therefore be what a caller who gave up may leave: a
// release, a read, a force unlock that still tells its local holders.
func Within(ctx context.Context, pool *Pool, timeout time.Duration, call func(ctx context.Context) error) error {
	stop, wait := CallerWait(ctx, timeout)
	var err error
	if late := pool.Bound(stop, wait, func() { err = call(stop) }); late != nil {
		return late
	}
	return err
}
