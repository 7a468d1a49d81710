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
)

// Result is what one try returned.
type Result struct {
	// Acquired: the try took (or re-entered) the lock.
	Acquired bool
	// TTL is how long the current hold may last (PTTL of the key) when the
	// try failed: the waiter's fallback timer if no unlock message comes.
	// Negative means unknown.
	TTL time.Duration
}

// Attempt is one acquisition of a primitive, as the loop drives it: the
// only way the loop reaches into a primitive.
type Attempt interface {
	// Try makes one try. atHead reports that it runs at the head of the
	// local queue: only such a try may mark its waiter in Redis (a writer
	// holding back readers, a semaphore waiter taking its turn), since a
	// try made before queueing could mark a goroutine that then lands
	// behind another local waiter, and the two would wait for each other.
	Try(ctx context.Context, atHead bool) (Result, error)
	// Keep makes the hold of an acquisition that acquired, before the
	// acquisition's outcome is recorded, so that a grant refused then (its
	// lease lapsed before its reply came: core.Start) is recorded as the
	// failure its caller gets. traced: the acquisition's span records, so
	// the hold's release is traced too. ctx is the caller's. What a
	// refused grant left, Keep gives back itself: the loop does not
	// Abandon after it.
	Keep(ctx context.Context, traced bool) error
	// Abandon cleans up after an acquisition that failed with err: the
	// marks its tries may have left, what a try whose reply was lost (or
	// a try still in flight) may hold. ctx is the caller's, maybe ended.
	// The loop calls it once, after leaving the queue.
	Abandon(ctx context.Context, err error)
}

// TryFunc is a function that makes one try, as an Attempt that never
// marks, keeps nothing and leaves nothing to clean up.
type TryFunc func(ctx context.Context) (Result, error)

// Try calls f.
func (f TryFunc) Try(ctx context.Context, _ bool) (Result, error) { return f(ctx) }

// Keep does nothing.
func (TryFunc) Keep(context.Context, bool) error { return nil }

// Abandon does nothing.
func (TryFunc) Abandon(context.Context, error) {}

// Admission is how many holders a primitive admits at once, which is how
// the loop treats the local waiters behind one that acquired.
type Admission uint8

const (
	// One holder (a lock, a writer): the next local waiter waits for a
	// release.
	One Admission = iota
	// Readers share the lock: local waiters are woken together.
	Readers
	// Several holders (a semaphore): after one acquires, the next local
	// waiter tries at once instead of waiting for a release (unless the
	// release that handed it over left nothing: core.Grant.NoneLeft).
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
	// Reenter skips the local queue: the owner already holds the lock,
	// and a re-entry must not queue behind those waiting for it.
	Reenter
	// QueueFirst subscribes before the first try, which then needs no
	// second one once the subscription is confirmed: for a waiter alone
	// on its channel (a fair lock's) when the lock is likely taken.
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
	// Fallback is how long the head of the queue waits before trying
	// again when it knows nothing better: after a hand-off was offered,
	// after a try that returned no TTL, behind a local holder.
	Fallback time.Duration
	// Owner is whom the acquisition is for: a release hands the lock to a
	// waiter of that owner, and the span names it.
	Owner   string
	Attempt Attempt
	// HandOff, when set, lets a local release hand the lock to this
	// waiter: the hub's claim (see core.Hub.Reserve). One that is a
	// Decliner is asked as the waiter joins the queue.
	HandOff Claimant
}

// Decliner is a claim that may decline every hand-off as its waiter joins
// the queue, after its first try: one whose replica sync asks for a WAIT
// after the acquisition, which a hold written by a release has not. It is
// asked then, not before, because the first try learns whether the
// server has replicas.
type Decliner interface {
	Declines(ctx context.Context) bool
}

// Do runs the loop inside the acquisition's span (tr), has the attempt
// keep what it acquired, and, when it fails, clean up. It returns nil
// when acquired and kept, ErrNotAcquired on contention (SingleTry) or
// when Wait passed, the context's cause when ctx ended, or the error of a
// try or of Keep.
//
// The loop reads as it runs: a first try, then joining the local queue,
// then waiting there (run.wait).
func Acquire(ctx context.Context, tr Trace, req Request) (err error) {
	r := run{req: req}
	r.sctx, r.rec = tr.Begin(ctx, req.Owner, req.Entry == SingleTry, req.Wait)
	r.ctx = r.sctx
	if r.rec.Recording || r.rec.Measured {
		r.began = time.Now() // else nothing records the outcome: the clock is not read
	}
	defer r.end(ctx, &err)
	// A ctx that has already ended gets no try; any other acquire makes
	// its first try whatever the wait bound, as Redisson's tryLock does:
	// the bound limits waiting, and a free lock or a re-entry never waits.
	// Resending that try while the server answers BUSY or LOADING is
	// waiting, though: the bound says how long (resendUntil).
	if ctx.Err() != nil {
		return ended(ctx)
	}
	if req.Wait > 0 && req.Entry != SingleTry {
		r.deadline = time.Now().Add(req.Wait) // measured from the call, as Redisson does
	}
	deadline := r.deadline
	if req.Entry != QueueFirst && (req.Entry != TryThenQueue || !req.Hub.Waiting(req.Channel)) {
		r.attempts++
		tctx := r.ctx
		if !deadline.IsZero() {
			tctx = context.WithValue(tctx, resendKey{}, deadline)
		}
		res, terr := req.Attempt.Try(tctx, false)
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

// ErrWaitBound is the cause of a wait that its bound (WithWaitTimeout)
// ended, as opposed to the caller's context: the acquisition then
// returns ErrNotAcquired.
var ErrWaitBound = errors.New("wait timeout")

// run is one acquisition's way through the loop: a first try, joining
// the local queue, waiting there. It lives on Do's stack.
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
	// lastErr is the transient error of the last try (or Join) made while
	// waiting, nil once a try answers again: the reason shown with the end
	// of ctx, since it may be why the wait did not succeed.
	lastErr error
}

// end has the attempt keep what it acquired, records the outcome (*err)
// and ends the span; a failed acquisition has its attempt clean up, with
// the caller's ctx.
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

// done is the error of an acquisition whose ctx ended (nil while it
// lasts), with the last transient error seen while waiting.
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

// first reads the try made before joining the queue. over reports that
// the acquisition ends here, with err (nil: acquired).
func (r *run) first(res Result, err error) (over bool, _ error) {
	if err != nil {
		// As after every try: an error caused by the end of ctx is that
		// end (the caller's cause), with the server's last answer when it
		// said to try again (a BUSY resent until ctx ended, or until the
		// wait bound: ErrNotAcquired, as after any wait). Any other error
		// of the first try is returned at once: Redis could not be reached
		// when the acquire began, and the caller hears so rather than
		// waiting for an outage to end. Replicas that did not acknowledge
		// are a failed try: a waiter tries again.
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

// join puts the acquisition in the local queue, retrying a Join that
// fails for an outage while ctx lasts (with a try between, since the lock
// may be freed meanwhile with no one subscribed to tell: acquired reports
// that such a try took it).
func (r *run) join() (w *Waiter, acquired bool, err error) {
	req := &r.req
	w, err = r.joinOnce()
	for err != nil {
		if d := r.done(); d != nil {
			return nil, false, d
		}
		// Without a try made first, the Join was this acquire's first
		// contact with Redis: its error is returned at once, as a first
		// try's is. A closed pub/sub connection is made anew by the next
		// Join; a closed client shows in the try below.
		if !r.tried || !(conn.Transient(err) || errors.Is(err, conn.ErrClosed)) {
			return nil, false, err
		}
		r.lastErr = err
		if !clock.Sleep(r.ctx, r.bo.next()) {
			return nil, false, r.done()
		}
		// Try again unless local waiters queued meanwhile, whom a try
		// would pass; then join again.
		if req.Entry == Reenter || !req.Hub.Waiting(req.Channel) {
			r.attempts++
			res, terr := req.Attempt.Try(r.ctx, false)
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

// joinOnce puts the acquisition in the local queue of its channel, with
// its claim unless the claim declines (Declines).
func (r *run) joinOnce() (*Waiter, error) {
	req := &r.req
	if d, ok := req.HandOff.(Decliner); ok && d.Declines(r.ctx) {
		req.HandOff = nil
	}
	return req.Hub.JoinClaimant(r.ctx, req.Channel, req.Admits == Readers, req.Owner, req.HandOff)
}

// wait waits at w's place in the queue: the head tries when woken, when
// its fallback timer fires (the holder's lease, a backoff) or at once
// after joining, since the lock may have been freed between the first try
// and the subscription. A release of this process may hand the lock over
// instead (Request.HandOff). passOn reports that the next local waiter
// should try at once after this one acquired.
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

// tryAtHead makes the try of the head of the queue. over reports that the
// acquisition ends, with err (nil: acquired); otherwise fallback is when
// to try again unless woken first.
func (r *run) tryAtHead(w *Waiter) (over bool, fallback time.Duration, err error) {
	r.attempts++
	res, err := r.req.Attempt.Try(r.ctx, true)
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
		// Redis refused the try (a script error, a bad argument): it
		// would fail again, so the acquire ends with it. (A try made here
		// first, after queueing behind local waiters, is no exception:
		// the Join reached Redis.)
		return true, 0, err
	}
	// Redis unreachable, restarting, failing over: the wait goes on
	// (bounded by ctx alone) and the head tries again after a backoff, or
	// at the next wake-up, such as the confirmation of a resubscription
	// after the outage.
	r.lastErr = err
	return false, r.bo.next(), nil
}

// ended is how an acquisition that ctx ended fails: ErrNotAcquired for
// the wait bound; for the caller's context, its cause, which matches
// ErrNotAcquired too, so that a caller tests one error whichever bound
// ended the wait. Nil while ctx lasts.
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

// notAcquired is a wait that its caller's context ended: it reads as the
// context's cause and matches ErrNotAcquired too.
type notAcquired struct{ cause error }

func (e notAcquired) Error() string { return e.cause.Error() }

func (e notAcquired) Unwrap() []error { return []error{e.cause, errs.ErrNotAcquired} }

// backoff spaces the tries of a waiter whose tries fail with a transient
// error: 10 ms doubling to 1 s, each delay jittered (half fixed, half
// random) so that the waiters of many processes do not retry in step when
// Redis comes back.
type backoff struct{ d time.Duration }

func (b *backoff) next() time.Duration {
	b.d = min(max(2*b.d, 10*time.Millisecond), time.Second)
	return b.d/2 + rand.N(b.d/2+1)
}
