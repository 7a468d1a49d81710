package lock

import (
	"context"
	"time"

	"github.com/relock-go/relock/internal/conn"
	"github.com/relock-go/relock/internal/core"
)

// What a holder does with a hold beyond Unlock: the scoped helper, and
// the questions it may ask of its context.

// Do takes the lock (as Lock), runs fn with the hold's context and
// unlocks on every path, a panic in fn included. It returns fn's error
// joined with Unlock's. fn should stop when held is done:
// context.Cause(held) is ErrLockLost when the lease was lost, and Do's
// error then matches ErrLockLost too.
func (m *Mutex) Do(ctx context.Context, fn func(held context.Context) error) error {
	return core.Do(ctx, func(ctx context.Context) (context.Context, error) { return m.Lock(ctx) }, m.Unlock, fn)
}

// FencingToken returns the fencing token of this lock's innermost hold
// that ctx carries, even when holds of other locks were taken inside it
// (an order's token from a line item's context), where the package-level
// FencingToken gives the innermost hold's of any lock.
func (m *Mutex) FencingToken(ctx context.Context) (int64, bool) { return core.TokenOf(ctx, m.key()) }

// Remaining returns how long the innermost hold ctx carries may still be
// counted on: until the instant by which its lease must be renewed (it
// grows back with every renewal; a fixed lease only shrinks), 0 once the
// hold ended; false when ctx carries no hold. A holder with a long step
// ahead asks before taking it.
func Remaining(ctx context.Context) (time.Duration, bool) { return core.Remaining(ctx) }

// NewOwner returns a context with ctx's values but none of its holds, of
// any primitive, nor their tokens, nor ctx's cancellation (a hold's
// context ends with the hold, which would end a wait for that very lock):
// what is acquired through it is a fresh owner's. A goroutine handed a
// hold's context shares that hold (as if handed a held mutex) and
// re-enters the lock through it; NewOwner makes it an owner of its own
// instead, which waits for the hold like any other.
func NewOwner(ctx context.Context) context.Context { return core.NewOwner(ctx) }

// Extend makes the fixed lease (WithLeaseTime) of the hold held carries
// end d after now: redsync's Extend, bsm/redislock's Refresh, on the same Redis layout a watchdog renewal
// writes, with the fencing token unchanged; it never shortens a lease.
// It returns ErrInvalidArgument for d under 30 ms, over 24 h or shorter
// than what is left, or for a hold the watchdog renews (that lease is renewed as long
// as it is held), ErrNotHeld when held carries no live hold of this lock,
// and an error matching ErrLockLost when the hold was lost (held ends
// then).
func (m *Mutex) Extend(held context.Context, d time.Duration) error {
	if err := m.ident().Check("extend", held, unmade); err != nil {
		return err
	}
	return m.id.Wrap("extend", conn.Within(held, m.workers, m.cfg.UnlockTimeout, func(ctx context.Context) error {
		return core.Extend(ctx, d, m.cfg.UnlockTimeout, m.key())
	}))
}
