package rwlock

import (
	"context"
	"time"

	"github.com/relock-go/relock/internal/core"
)

// RDo takes the read lock (as RLock), runs fn with the hold's context and
// read-unlocks on every path, a panic in fn included; see lock.Mutex.Do.
func (rw *RWMutex) RDo(ctx context.Context, fn func(held context.Context) error) error {
	return core.Do(ctx, func(ctx context.Context) (context.Context, error) { return rw.RLock(ctx) }, rw.RUnlock, fn)
}

// Do takes the write lock (as Lock), runs fn with the hold's context and
// unlocks on every path, a panic in fn included; see lock.Mutex.Do.
func (rw *RWMutex) Do(ctx context.Context, fn func(held context.Context) error) error {
	return core.Do(ctx, func(ctx context.Context) (context.Context, error) { return rw.Lock(ctx) }, rw.Unlock, fn)
}

// Remaining returns how long the innermost hold in ctx may still be counted on.
func Remaining(ctx context.Context) (time.Duration, bool) { return core.Remaining(ctx) }

// FencingToken returns the token of this lock's hold in ctx (the write
// hold's if both), even under other locks' holds; see lock.Mutex.FencingToken.
func (rw *RWMutex) FencingToken(ctx context.Context) (int64, bool) {
	return core.TokenOf(ctx, rw.key(write), rw.key(read))
}

// Extend makes the fixed lease (WithLeaseTime) of this lock's innermost
// hold in held, read or write, end d after now, token unchanged; it never
// shortens a lease. It returns ErrInvalidArgument for d under 30 ms, over
// 24 h or under what is left, or for a hold the watchdog renews; ErrNotHeld
// when held carries no live hold of this lock; an error matching
// ErrLockLost when the hold was lost (held ends then).
func (rw *RWMutex) Extend(held context.Context, d time.Duration) error {
	if err := rw.ident().Check("extend", held, unmade); err != nil {
		return err
	}
	return rw.id.Wrap("extend", core.Extend(held, rw.client, d, rw.cfg.UnlockTimeout, rw.key(read), rw.key(write)))
}
