package core

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/relock-go/relock/internal/clock"
	"github.com/relock-go/relock/internal/conn"
	"github.com/relock-go/relock/internal/errs"
	"github.com/relock-go/relock/internal/lease"
	"github.com/relock-go/relock/internal/scripts"
)

// Result is what one try returned.
type Result struct {
	Acquired bool // the try took (or re-entered) the lock
	// TTL is the holder's PTTL when the try failed: the waiter's fallback
	// timer if no unlock message comes. Negative means unknown.
	TTL time.Duration
}

// Reply is what one try's round trip found (Attempt.Send).
type Reply struct {
	Count int64 // the hold's count once the try took or re-entered it; 0: not
	Token int64 // the hold's fencing token, when Count > 0
	// TTL is the holder's PTTL when the try did not take (negative: unknown).
	TTL time.Duration
	// Acks is what a WAIT after the script answered, for Took to read.
	Acks scripts.Acks
	// SentAt is when the try was sent, on Request.Watchdog's clock: set by
	// the loop on every reply, a failed or late try's too.
	SentAt time.Time
}

// Attempt is one acquisition of a primitive: the loop's only way into it.
// The loop bounds each try (run.try): Send may run on a worker and go on
// after the caller stopped waiting, so it changes nothing the caller's
// goroutine reads but through what it returns; Took reads that, on the
// caller's goroutine.
type Attempt interface {
	// Send makes one try's round trip. Only a try atHead (of the local
	// queue) may mark its waiter in Redis (a writer holding back readers, a
	// semaphore's turn): one marked before queueing could land behind
	// another local waiter, and the two would wait for each other.
	Send(ctx context.Context, atHead bool) (Reply, error)
	// Took reads a try's reply, or its error (Lost tells a late try, or one
	// that may have run): what it leaves to give back, and its Result.
	Took(ctx context.Context, r Reply, err error, atHead bool) (Result, error)
	// Keep makes the hold before the outcome is recorded, so that a grant
	// refused then (lease lapsed: Start) is the caller's failure; Keep, not
	// Abandon, gives back what it left. traced: trace the release too.
	Keep(ctx context.Context, traced bool) error
	// Abandon cleans up after an acquisition that failed with err: marks
	// its tries left, what a lost or in-flight try may hold. Called once,
	// after leaving the queue; ctx is the caller's, maybe ended.
	Abandon(ctx context.Context, err error)
}

// Admission is how many holders a primitive admits at once.
type Admission uint8

const (
	// One holder (a lock, a writer): the next local waiter waits for a release.
	One Admission = iota
	// Readers share the lock: local waiters are woken together.
	Readers
	// Several (a semaphore): the next local waiter tries at once, unless Grant.NoneLeft.
	Several
)

// Entry is how an acquisition starts.
type Entry uint8

const (
	// TryThenQueue tries first, then queues behind local waiters if the
	// lock is held (or tries after them if some already wait).
	TryThenQueue Entry = iota
	// SingleTry makes a single try (TryLock): contention is ErrNotAcquired.
	SingleTry
	// Reenter skips the local queue: the owner holds the lock already.
	Reenter
	// QueueFirst subscribes before the first try (which then needs no
	// second): for a fair lock's lone waiter when the lock is likely taken.
	QueueFirst
)

// Request is what the loop needs of one acquisition.
type Request struct {
	Hub     *Hub
	Channel string
	Admits  Admission
	Entry   Entry
	// Wait bounds the wait alone (0: only ctx bounds it).
	Wait time.Duration
	// Fallback is how long the head waits to try again knowing nothing
	// better (after a hand-off offer, a TTL-less try, behind a local holder).
	Fallback time.Duration
	// Owner is whom the acquisition is for (hand-offs, the span).
	Owner   string
	Attempt Attempt
	// HandOff, when set, lets a local release hand this waiter the lock.
	HandOff Claimant
	// Client's workers run a try whose ctx can end; a try-again reply is
	// resent for Patience (run.try).
	Client   Client
	Patience time.Duration
	// Watchdog's clock stamps each try's SentAt (nil: time.Now).
	Watchdog *lease.Watchdog
}

// Acquire runs the loop (first try, local queue, wait) in tr's span, has
// the attempt keep what it acquired or else clean up, and returns nil,
// ErrNotAcquired on contention (SingleTry) or when Wait passed, the
// context's cause when ctx ended, or the error of a try or of Keep.
func Acquire(ctx context.Context, tr Trace, req Request) (err error) {
	r := run{req: req}
	r.sctx, r.rec = tr.Begin(ctx, req.Owner, req.Entry == SingleTry, req.Wait)
	r.ctx = r.sctx
	if r.rec.Recording || r.rec.Measured {
		r.began = time.Now() // read only when something records the outcome
	}
	defer r.end(ctx, &err)
	// An ended ctx gets no try; else the first try is made whatever the
	// bound (as Redisson's tryLock): a free lock or re-entry never waits.
	// Resending it on BUSY or LOADING is waiting, though (run.try).
	if ctx.Err() != nil {
		return ended(ctx)
	}
	if req.Wait > 0 && req.Entry != SingleTry {
		r.deadline = time.Now().Add(req.Wait) // measured from the call, as Redisson does
	}
	deadline := r.deadline
	if req.Entry != QueueFirst && (req.Entry != TryThenQueue || !req.Hub.Waiting(req.Channel)) {
		tctx := r.ctx
		if !deadline.IsZero() {
			tctx = context.WithValue(tctx, resendKey{}, deadline)
		}
		res, terr := r.try(tctx, false)
		if over, err := r.first(res, terr); over {
			return err
		}
	}
	if !deadline.IsZero() {
		var cancel context.CancelFunc
		r.ctx, cancel = context.WithDeadlineCause(r.ctx, deadline, ErrWaitBound)
		defer cancel()
		if d := r.done(); d != nil {
			return d // the bound passed during the first try
		}
	}
	w, acquired, err := r.join()
	if acquired || err != nil {
		return err
	}
	passOn := req.Admits == Several
	defer func() {
		// Only a waiter with a claim (HandOff) is handed anything.
		if given, handed := w.Leave(acquired && !passOn, req.Fallback); handed && !acquired {
			r.req.HandOff.Discard(given) // after leaving: the lock may pass to the next
		}
	}()
	acquired, passOn, err = r.wait(w)
	return err
}

// ErrWaitBound is the cause of a wait ended by its bound (WithWaitTimeout)
// rather than the caller's context: the acquisition returns ErrNotAcquired.
var ErrWaitBound = errors.New("wait timeout")

// run is one acquisition's way through the loop, on Acquire's stack.
type run struct {
	ctx      context.Context // the acquiring context, then bounded by the wait
	sctx     context.Context // the acquiring context, which the span's end reads
	rec      Record
	began    time.Time // when Acquire began, if rec records anything
	req      Request   // a copy: a pointer kept here would move the caller's to the heap
	attempts int
	deadline time.Time // the wait bound's, if any
	res      Result    // of the last try
	tried    bool      // a try was made before joining
	bo       backoff
	// lastErr is the transient error of the last try (or Join) while
	// waiting, nil once a try answers: shown with the end of ctx.
	lastErr error
}

// end has the attempt Keep or Abandon, records the outcome, ends the span.
func (r *run) end(ctx context.Context, err *error) {
	acquired := *err == nil
	if acquired {
		*err = r.req.Attempt.Keep(ctx, r.rec.Recording)
	}
	if !r.began.IsZero() {
		r.rec.End(r.sctx, *err, r.attempts, time.Since(r.began))
	}
	r.rec.Span.End()
	if *err != nil && !acquired {
		r.req.Attempt.Abandon(ctx, *err)
	}
}

// done is ended(r.ctx) with the last transient error (nil while ctx lasts).
func (r *run) done() error {
	return r.withLast(ended(r.ctx))
}

// withLast is cause with the last transient error seen while waiting.
func (r *run) withLast(cause error) error {
	if cause != nil && r.lastErr != nil {
		return fmt.Errorf("%w (last error while waiting: %w)", cause, r.lastErr)
	}
	return cause
}

// first reads the try made before joining; over: it ends here, with err.
func (r *run) first(res Result, err error) (over bool, _ error) {
	if err != nil {
		// An error caused by the end of ctx is that end, with the server's
		// last try-again answer (a BUSY resent until ctx or the bound ended).
		// Any other first-try error returns at once rather than wait out an
		// outage; ErrNotReplicated is a failed try, tried again.
		var rs *resent
		switch {
		case errors.As(err, &rs):
			r.lastErr = rs.answer
		case conn.TryAgain(err):
			r.lastErr = err
			if !r.deadline.IsZero() && !time.Now().Before(r.deadline) {
				return true, r.withLast(errs.ErrNotAcquired)
			}
		}
		if d := r.done(); d != nil {
			return true, d
		}
		if r.req.Entry == SingleTry || !errors.Is(err, errs.ErrNotReplicated) {
			return true, err
		}
		r.lastErr = err
		res = Result{TTL: r.bo.next()}
	}
	r.res, r.tried = res, true
	switch {
	case res.Acquired:
		return true, nil
	case r.req.Entry == SingleTry:
		return true, errs.ErrNotAcquired
	}
	return false, nil
}

// join queues the acquisition, retrying a Join an outage failed while ctx
// lasts, with a try between (the lock may be freed unannounced meanwhile).
func (r *run) join() (w *Waiter, acquired bool, err error) {
	req := &r.req
	w, err = r.joinOnce()
	for err != nil {
		if d := r.done(); d != nil {
			return nil, false, d
		}
		// Without an earlier try, the Join was the first contact with Redis
		// and fails at once, as a first try does. The next Join remakes a
		// closed pub/sub connection; a closed client shows in the try below.
		if !r.tried || !(conn.Transient(err) || errors.Is(err, conn.ErrClosed)) {
			return nil, false, err
		}
		r.lastErr = err
		if !clock.Sleep(r.ctx, r.bo.next()) {
			return nil, false, r.done()
		}
		// Try unless local waiters queued meanwhile: a try would pass them.
		if req.Entry == Reenter || !req.Hub.Waiting(req.Channel) {
			res, terr := r.try(r.ctx, false)
			r.res = res // the fallback after joining is this try's
			switch {
			case terr == nil && res.Acquired:
				return nil, true, nil
			case terr == nil:
				r.lastErr = nil
			case r.done() != nil:
				return nil, false, r.done()
			case !conn.Transient(terr):
				return nil, false, terr
			default:
				r.lastErr = terr
			}
		}
		w, err = r.joinOnce()
	}
	return w, false, nil
}

// joinOnce queues the acquisition, with its claim unless that Declines.
func (r *run) joinOnce() (*Waiter, error) {
	req := &r.req
	if req.HandOff != nil && req.HandOff.Declines(r.ctx) {
		req.HandOff = nil
	}
	return req.Hub.JoinClaimant(r.ctx, req.Channel, req.Admits == Readers, req.Owner, req.HandOff)
}

// wait waits at w's place: the head tries when woken, on its fallback
// timer, or at once after joining (the lock may have been freed before the
// subscription). passOn: the next local waiter should try at once.
func (r *run) wait(w *Waiter) (acquired, passOn bool, err error) {
	req := &r.req
	passOn = req.Admits == Several
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	tryNow := w.Head()
	fallback := r.res.TTL
	if !r.tried {
		fallback = -1
	}
	for {
		if tryNow && req.HandOff != nil && !w.BeginTry() {
			// A release is handing the lock over: its End (Handed or not)
			// wakes this waiter; the fallback timer stays armed meanwhile.
			tryNow = false
			if fallback < 0 {
				fallback = max(req.Fallback, time.Second)
			}
		}
		if tryNow {
			var over bool
			if over, fallback, err = r.tryAtHead(w); over {
				return err == nil, passOn, err
			}
		}
		tryNow = false
		var fire <-chan time.Time
		if w.Head() && fallback >= 0 {
			if timer == nil {
				timer = time.NewTimer(fallback)
			} else {
				timer.Reset(fallback)
			}
			fire = timer.C
		}
		select {
		case <-w.Wake():
			if req.HandOff != nil {
				if g, ok := w.Granted(); ok {
					r.attempts++
					req.HandOff.Granted(g)
					return true, passOn && !g.NoneLeft, nil
				}
			}
			kick, hint := w.Take()
			switch {
			case kick:
				tryNow = true
			case hint > 0:
				fallback = hint // promoted behind a local holder: wait for it
			}
		case <-fire:
			tryNow = true
		case <-r.ctx.Done():
			return false, passOn, r.done()
		}
		tryNow = tryNow && w.Head()
	}
}

// tryAtHead makes the head's try. over: the acquisition ends with err
// (nil: acquired); else fallback is when to try again unless woken.
func (r *run) tryAtHead(w *Waiter) (over bool, fallback time.Duration, err error) {
	res, err := r.try(r.ctx, true)
	if r.req.HandOff != nil {
		w.EndTry()
	}
	switch {
	case err == nil:
		r.lastErr = nil
		r.bo = backoff{}
		if res.Acquired {
			return true, 0, nil
		}
		if res.TTL < 0 {
			return false, max(r.req.Fallback, time.Second), nil
		}
		return false, res.TTL, nil
	case r.done() != nil:
		return true, 0, r.done()
	case !conn.Transient(err):
		// Redis refused the try (a script error, a bad argument): it would
		// fail again. Even a first try ends here: the Join reached Redis.
		return true, 0, err
	}
	// Redis unreachable, restarting, failing over: wait on (bounded by ctx)
	// and try after a backoff or at the next wake-up (a resubscription).
	r.lastErr = err
	return false, r.bo.next(), nil
}

// ended is how an acquisition ended by ctx fails (nil while it lasts):
// ErrNotAcquired for the wait bound, else the caller's cause, which
// matches ErrNotAcquired too.
func ended(ctx context.Context) error {
	cause := context.Cause(ctx)
	switch {
	case cause == nil:
		return nil
	case errors.Is(cause, ErrWaitBound):
		return errs.ErrNotAcquired
	}
	return notAcquired{cause}
}

// notAcquired reads as the caller's cause and matches ErrNotAcquired too.
type notAcquired struct{ cause error }

func (e notAcquired) Error() string { return e.cause.Error() }

func (e notAcquired) Unwrap() []error { return []error{e.cause, errs.ErrNotAcquired} }

// backoff spaces tries that fail transiently: 10 ms doubling to 1 s, half
// of each delay random, so many processes' waiters do not retry in step.
type backoff struct{ d time.Duration }

func (b *backoff) next() time.Duration {
	b.d = min(max(2*b.d, 10*time.Millisecond), time.Second)
	return b.d/2 + rand.N(b.d/2+1)
}
