package rwlock

import (
	"context"
	"strconv"
	"time"

	"github.com/relock-go/relock/internal/core"
	"github.com/relock-go/relock/internal/scripts"
)

// IsLocked reports whether any owner holds the lock, reading or writing.
func (rw *RWMutex) IsLocked(ctx context.Context) (bool, error) {
	if err := rw.ident().Check("islocked", ctx, unmade); err != nil {
		return false, err
	}
	n, err := rw.client.Query(ctx, rw.cfg.UnlockTimeout, "exists", rw.name).Int64()
	if err != nil {
		return false, rw.id.Wrap("islocked", err)
	}
	return n == 1, nil
}

// HoldCount returns ctx's owner's read and write counts (0, 0 when ctx
// carries no hold of this lock).
func (rw *RWMutex) HoldCount(ctx context.Context) (reads, writes int, err error) {
	if err := rw.ident().Check("holdcount", ctx, unmade); err != nil {
		return 0, 0, err
	}
	id, ok := core.OwnerOf(ctx, rw.key(read), rw.key(write))
	if !ok {
		return 0, 0, nil
	}
	vals, err := rw.client.Query(ctx, rw.cfg.UnlockTimeout, "hmget", rw.name, id, id+":write").Slice()
	if err != nil {
		return 0, 0, rw.id.Wrap("holdcount", err)
	}
	count := func(v any) int {
		s, _ := v.(string)
		n, _ := strconv.Atoi(s)
		return n
	}
	return count(vals[0]), count(vals[1]), nil
}

// TTL returns how long the lock's hash lasts unless renewed (its holds'
// longest lease): 0 when the lock is free, negative with no expiry.
func (rw *RWMutex) TTL(ctx context.Context) (time.Duration, error) {
	if err := rw.ident().Check("ttl", ctx, unmade); err != nil {
		return 0, err
	}
	d, err := rw.client.Query(ctx, rw.cfg.UnlockTimeout, "pttl", rw.name).Millis()
	if err != nil {
		return 0, rw.id.Wrap("ttl", err)
	}
	return scripts.TTL(d), nil
}

// ForceUnlock deletes the lock whoever holds it, readers' lease keys
// included, wakes the waiters and reports whether there was a lock. A
// holder on this client and watchdog learns of it at once, one elsewhere
// at its next renewal; either way its context ends with ErrLockLost. A
// name holding a plain lock or a semaphore is left as it is, with an error.
func (rw *RWMutex) ForceUnlock(ctx context.Context) (bool, error) {
	if err := rw.ident().Check("forceunlock", ctx, unmade); err != nil {
		return false, err
	}
	ok, err := core.ForceUnlockAndTell(ctx, rw.client, rw.cfg.UnlockTimeout, rw.cfg.Watchdog, rw.hub, core.KindRWLock, rw.name, rw.channel, "force-unlocked")
	return ok, rw.id.Wrap("forceunlock", err)
}
