package lock

import (
	"context"
	"time"

	"github.com/relock-go/relock/internal/core"
)

// Do takes the lock (as Lock), runs fn with the hold's context and unlocks
// on every path, a panic in fn included; it returns fn's error joined with
// Unlock's. fn should stop when held is done: if the lease was lost,
// context.Cause(held) and Do's error match ErrLockLost.
func (m *Mutex) Do(ctx context.Context, fn func(held context.Context) error) error {
	return core.Do(ctx, func(ctx context.Context) (context.Context, error) { return m.Lock(ctx) }, m.Unlock, fn)
}

// FencingToken returns the token of this lock's innermost hold in ctx,
// even under holds of other locks (an order's token from a line item's
// context); the package-level FencingToken takes any lock's.
func (m *Mutex) FencingToken(ctx context.Context) (int64, bool) { return core.TokenOf(ctx, m.key()) }

// Remaining returns how long the innermost hold ctx carries may still be
// counted on: until its lease must be renewed (a renewal restores it; a
// fixed lease only shrinks), 0 once the hold ended; false when ctx carries
// no hold. Ask before a long step.
func Remaining(ctx context.Context) (time.Duration, bool) { return core.Remaining(ctx) }

// NewOwner returns a context with ctx's values but none of its holds (of
// any primitive), tokens or cancellation (a hold's context ends with the
// hold, which would end a wait for that very lock). A goroutine handed a
// hold's context shares the hold; through NewOwner it becomes an owner of
// its own, which waits like any other.
func NewOwner(ctx context.Context) context.Context { return core.NewOwner(ctx) }

// Extend makes the fixed lease (WithLeaseTime) of the hold in held end d
// after now, as redsync's Extend or bsm/redislock's Refresh, with the
// fencing token unchanged; it never shortens a lease. It returns
// ErrInvalidArgument for d under 30 ms, over 24 h or shorter than what is
// left, or for a hold the watchdog renews; ErrNotHeld when held carries no
// live hold of this lock; an error matching ErrLockLost (and held ends)
// when the hold was lost.
func (m *Mutex) Extend(held context.Context, d time.Duration) error {
	if err := m.ident().Check("extend", held, unmade); err != nil {
		return err
	}
	return m.id.Wrap("extend", core.Extend(held, m.client, d, m.cfg.UnlockTimeout, m.key()))
}
