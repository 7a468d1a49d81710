package conn

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// go-redis ignores context deadlines unless ContextTimeoutEnabled, and
// retries on its own, so a stalled server holds a call for its read
// timeout times its retries: Bound waits only as long as the caller may.

// ErrLate is the cause of a call that did not return within its own bound
// (not its caller's context).
var ErrLate = errors.New("no reply in time")

// LateError reports a call its caller stopped waiting for, which goes on.
// It matches its cause (ctx's, or ErrLate and context.DeadlineExceeded).
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

// AfterLate returns a channel closed once the late call err reports has
// returned (for a give-back of what it may take); nil for no late call.
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

// flight is one call run by Bound, reused through flights unless late.
type flight struct {
	f     func()
	run   func() // fl.exec, taken once: a method value allocates
	done  chan struct{}
	timer *time.Timer
	// state: running, then returned, or late (gone closes when f returns).
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

// Bound runs f and waits until it returns (nil), ctx ends or d passes
// (d <= 0: no bound of its own). Then it returns a *LateError whose cause
// is context.Cause(ctx) or ErrLate, and f goes on in the background: the
// caller must not touch what f writes. A call nothing can cut short, or
// any call of a nil Pool, runs on the caller's goroutine.
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

// CallerWait is how a call on its own timeout (a release, an inspection)
// waits: until timeout, ctx's deadline if sooner and ahead, or ctx's end;
// a ctx already ended does not cut the call short (stop keeps its values).
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

// Detached returns ctx's values without its cancellation, marked as work
// nobody else waits for (a give-back, a Redlock member's release): a call
// on its own timeout is then waited for to its end, and so is what waits
// on the work (Drain, a give-back's next try).
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

// Within runs call on pool, returning within CallerWait's bound or with a
// *LateError while call goes on. call must write only what a caller who
// gave up may leave: a release, a read, a force unlock that still tells
// its local holders.
func Within(ctx context.Context, pool *Pool, timeout time.Duration, call func(ctx context.Context) error) error {
	stop, wait := CallerWait(ctx, timeout)
	var err error
	if late := pool.Bound(stop, wait, func() { err = call(stop) }); late != nil {
		return late
	}
	return err
}
