package base

import (
	"context"
	"embed"
	"errors"

	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/internal/keys"
	"github.com/relock-go/relock/internal/lease"
	"github.com/relock-go/relock/internal/queue"
	"github.com/relock-go/relock/internal/scripts"
)

//go:embed lua/*.lua
var luaFS embed.FS

// ForceUnlockScript is the script ForceUnlock runs (tests tell it apart by
// its source).
var ForceUnlockScript = scripts.Load(luaFS, "lua/force_unlock.lua")

// The kinds of lock ForceUnlock knows, as Redis tells them apart (the
// hash's fields).
const (
	KindLock      = "lock"
	KindRWLock    = "rwlock"
	KindSemaphore = "semaphore"
)

// ErrChanged reports that a force unlock found the name holding another
// kind than the caller expected: nothing was changed.
var ErrChanged = errors.New("changed kind since it was read; nothing done")

// ForceUnlockAndTell is ForceUnlock for a primitive: its holders in this
// process (their leases on wd and c) are declared lost with reason once
// the script has run, and its local waiters are woken on channel. The
// leases are taken before the script, so that a hold a local waiter takes
// right after the unlock message is not among them.
func ForceUnlockAndTell(ctx context.Context, c redis.UniversalClient, wd *lease.Watchdog, hub *queue.Hub, kind, name, channel, reason string) (bool, error) {
	held := lease.Held(wd, c, kind, name)
	ok, err := ForceUnlock(ctx, c, kind, name, hub.PublishCommand())
	if ok {
		lease.LoseAll(held, reason)
		hub.Release(channel)
	}
	return ok, err
}

// ForceUnlock releases the lock called name, of kind, whoever holds it, in
// one script: a lock's or rwlock's hash is deleted (with the rwlock
// readers' lease keys); a semaphore's permits are deleted and its used
// count set to 0 (its size record stays). Its waiters are woken on the
// channel Redisson uses; publish is the hub's command (PUBLISH, SPUBLISH
// on a cluster). It reports whether anything was held, and ErrChanged when
// the name is of another kind.
func ForceUnlock(ctx context.Context, c redis.UniversalClient, kind, name, publish string) (bool, error) {
	argv := make([]any, 0, 6)
	switch kind {
	case KindRWLock:
		argv = append(argv, name, keys.RWLockChannel(name), keys.Tag(name))
	case KindSemaphore:
		argv = append(argv, name, keys.SemaphoreChannel(name), keys.Permits(name), keys.Weights(name))
	default:
		argv = append(argv, name, keys.LockChannel(name))
	}
	nkeys := len(argv)
	n, err := ForceUnlockScript.Call(ctx, c, nkeys, append(argv, kind, publish)...).Int64()
	switch {
	case err != nil:
		return false, err
	case n == -1:
		return false, ErrChanged
	}
	return n == 1, nil
}
