package base

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/internal/errs"
	"github.com/relock-go/relock/internal/lease"
	"github.com/relock-go/relock/internal/scripts"
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
// longer held in Redis"). Any other reply is a release.
func Released(res int64, err error, l *lease.Lease, gone string) error {
	switch {
	case err != nil:
		return err
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

// Withdraw runs script, which takes back the waiting mark of a waiter that
// gave up (its wait ended: ctx done, the wait timeout, an error) and wakes
// the waiters the mark held back, so that they need not wait for the mark
// to expire. argv is as scripts.Call takes it.
//
// It is one call (go-redis's own retries aside), on ctx's values but not
// its cancellation (ctx is usually done by now), bounded by
// min(unlockTimeout, WithdrawBound), made on the caller's goroutine: no
// goroutine outlives it. It is not retried for the unlock timeout as a
// release is: during a partition that would hold the caller seconds past
// its deadline, and the withdrawal is only an optimisation. The bound
// holds when the client applies context deadlines to the network
// (ContextTimeoutEnabled, as the README advises); otherwise the client's
// own read/write timeouts bound it, as any call. A mark left behind must
// therefore be safe: each primitive's marks grant nothing and expire.
// The error tells a caller that one may be left.
func Withdraw(ctx context.Context, script *scripts.Script, c redis.UniversalClient, unlockTimeout time.Duration, nkeys int, argv ...any) error {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), min(unlockTimeout, WithdrawBound))
	defer cancel()
	return script.Call(wctx, c, nkeys, argv...).Err()
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
