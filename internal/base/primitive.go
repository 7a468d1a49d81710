package base

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/internal/errs"
	"github.com/relock-go/relock/internal/lease"
	"github.com/relock-go/relock/internal/scripts"
	"github.com/relock-go/relock/internal/conn"
)

// Ident names a primitive value in its errors and keeps why its
// constructor refused its arguments, if it did.
type Ident struct {
	Primitive string // "lock", "rwlock", "semaphore", "redlock", "multilock"
	Name      string
	Invalid   string // why the constructor's arguments are bad; "" when good
}

// Check refuses a call, with ErrInvalidArgument and before anything is
// written, on a value whose constructor refused its arguments, on the
// zero value (id.Primitive == ""; unmade says what it is, "Mutex not made
// by lock.New" say), or with a nil context.
func (id *Ident) Check(op string, ctx context.Context, unmade Ident) error {
	switch {
	case id.Primitive == "":
		return errs.Invalid(op, unmade.Primitive, "", unmade.Invalid)
	case id.Invalid != "":
		return errs.Invalid(op, id.Primitive, id.Name, id.Invalid)
	case ctx == nil:
		return errs.Invalid(op, id.Primitive, id.Name, "nil context")
	}
	return nil
}

// Wrap names the operation and the lock in err; nil stays nil.
func (id *Ident) Wrap(op string, err error) error { return errs.New(op, id.Primitive, id.Name, err) }

// Released reads the reply of a release script: -1 means the hold was no
// longer in Redis, so the release reports ErrLockLost, with the reason the
// watchdog found if it declared the lease lost, else gone ("the lock was no
// longer held in Redis"); 2, a release whose notification was refused
// (Redis 6, which cannot be asked before the write), reports
// ErrWaitersNotTold. Any other reply is a release.
func Released(res int64, err error, l *lease.Lease, gone string) error {
	switch {
	case err != nil:
		return err
	case res == 2:
		return errs.ErrWaitersNotTold
	case res != -1:
		return nil
	}
	if lerr := l.Lost(); lerr != nil {
		return errs.Reason(lerr)
	}
	return fmt.Errorf("%w: %s", errs.ErrLockLost, gone)
}

// WithdrawBound caps how long a waiter that gave up spends taking its
// waiting mark back (the unlock timeout bounds it too): it is an
// optimisation, not worth holding a caller long.
const WithdrawBound = 250 * time.Millisecond

// WithdrawWait is how long a waiter that gave up waits for its
// withdrawal before it returns: on a healthy server it is done by then, so
// the next waiter finds no stale mark; on a stalled one the caller, whose
// wait is over, must not be held longer.
const WithdrawWait = 50 * time.Millisecond

// Withdraw runs script, which takes back the waiting mark of a waiter that
// gave up (its wait ended: ctx done, the wait timeout, an error) and wakes
// the waiters the mark held back, so that they need not wait for the mark
// to expire. argv is as scripts.Call takes it.
//
// It is one call (go-redis's own retries aside), on ctx's values but not
// its cancellation, bounded by min(unlockTimeout, WithdrawBound). The
// caller waits for it up to WithdrawWait; the rest goes on in the
// background on the client's workers. It is not retried for the unlock
// timeout as a release is, since the withdrawal is only an optimisation. A
// mark left behind must therefore be safe: each primitive's marks grant
// nothing and expire. The error tells a caller that one may be left.
//
// after, when not nil, is a try still in flight (conn.AfterLate), which
// may write the mark when it lands: the withdrawal then waits for it, in
// the background, and Withdraw returns at once.
func Withdraw(ctx context.Context, after <-chan struct{}, script *scripts.Script, c redis.UniversalClient, unlockTimeout time.Duration, nkeys int, argv ...any) error {
	bound := min(unlockTimeout, WithdrawBound)
	ctx = context.WithoutCancel(ctx)
	var err error
	call := func() {
		wctx, cancel := context.WithTimeout(ctx, bound)
		defer cancel()
		err = script.Call(wctx, c, nkeys, argv...).Err()
	}
	if after != nil {
		go func() {
			<-after
			call()
		}()
		return nil
	}
	if late := conn.PoolFor(c).Bound(ctx, min(bound, WithdrawWait), call); late != nil {
		return late
	}
	return err
}

// TTL turns a PTTL reply into what the primitives' TTL returns: 0 for a
// key that does not exist (the lock is free), -1 for one without an
// expiry.
func TTL(d time.Duration) time.Duration {
	switch {
	case d == -2*time.Nanosecond || d == -2*time.Millisecond:
		return 0
	case d < 0:
		return -1
	}
	return d
}

// Refuse returns ErrInvalidArgument for op with reason, naming the lock.
func (id *Ident) Refuse(op, reason string) error {
	return errs.Invalid(op, id.Primitive, id.Name, reason)
}

// Within runs call, which reads or writes Redis, so that it returns
// within timeout, or ctx's deadline when sooner (conn.CallerWait), whatever the
// client does meanwhile (go-redis ignores context deadlines unless told,
// and retries on its own): a call still unanswered then goes on in the
// background on pool and Within returns a *conn.LateError. What call
// writes must therefore be what a caller who gave up may leave: a
// release, a read, a force unlock that still tells its local holders.
func Within(ctx context.Context, pool *conn.Pool, timeout time.Duration, call func(ctx context.Context) error) error {
	stop, wait := conn.CallerWait(ctx, timeout)
	var err error
	if late := pool.Bound(stop, wait, func() { err = call(stop) }); late != nil {
		return late
	}
	return err
}

// GiveBack runs undo in the background, which gives back what an
// acquisition that gave up may have taken: after late (a try its caller
// stopped waiting for, when not nil) has returned, and again while undo
// fails with a transient error, for up to window. A try that a stalled
// server held runs when the server comes back, maybe after any give-back
// sent during the stall: the give-back must outlast the stall (window is
// the acquisition's lease, past which its grant lapses anyway).
func GiveBack(late <-chan struct{}, window time.Duration, undo func() error) {
	go func() {
		if late != nil {
			<-late
		}
		end := time.Now().Add(window)
		for {
			err := undo()
			if err == nil || !errs.Transient(err) || time.Now().After(end) {
				return
			}
		}
	}()
}
