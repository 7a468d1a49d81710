package core

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/relock-go/relock/internal/conn"
	"github.com/relock-go/relock/internal/errs"
	"github.com/relock-go/relock/internal/lease"
	"github.com/relock-go/relock/internal/scripts"
)

// The kinds of lock ForceUnlock knows, as Redis tells them apart.
const (
	KindLock      = "lock"
	KindRWLock    = "rwlock"
	KindSemaphore = "semaphore"
)

// ClientClosed reports whether err is a call on a closed client, which no
// retry can mend: a candidate on one can never hold anything.
func ClientClosed(err error) bool { return errors.Is(err, conn.ErrClosed) }

// ErrChanged is a force unlock that found the name held by another kind
// than the caller's (one name serves one kind) and changed nothing.
var ErrChanged = fmt.Errorf("%w: nothing done", errs.ErrWrongKind)

// ForceUnlockAndTell is ForceUnlock, returning within timeout (c.Within),
// then declares this process's holders (listed before the script, lest a
// hold taken just after count) lost with reason and wakes local waiters
// on channel, even when the caller stopped waiting. ok is false on error.
func ForceUnlockAndTell(ctx context.Context, c Client, timeout time.Duration, wd *lease.Watchdog, hub *Hub, kind, name, channel, reason string) (bool, error) {
	var ok bool
	err := c.Within(ctx, timeout, func(ctx context.Context) (err error) {
		held := lease.Held(wd, c.Client, kind, name)
		ok, err = ForceUnlock(ctx, c.Client, kind, name, hub.PublishCommand())
		if ok {
			lease.LoseAll(held, reason)
			hub.Release(channel)
		}
		return err
	})
	if err != nil {
		return false, err // ok is a late call's
	}
	return ok, nil
}

// ForceUnlock releases the lock name of kind, whoever holds it, in one
// script: a lock's or rwlock's hash goes (with the readers' lease keys); a
// semaphore's permits go and its used count is set to 0 (its size stays).
// Waiters are woken on Redisson's channel with publish (Hub.PublishCommand).
// It reports whether anything was held; ErrChanged for another kind.
func ForceUnlock(ctx context.Context, c conn.Client, kind, name, publish string) (bool, error) {
	s := forceUnlockLua{Hash: name, Kind: kind, Publish: publish}
	switch kind {
	case KindRWLock:
		s.Channel, s.PrefixOrPermits = scripts.RWLockChannel(name), scripts.Tag(name)
	case KindSemaphore:
		s.Channel, s.PrefixOrPermits, s.Weights = scripts.SemaphoreChannel(name), scripts.Permits(name), scripts.Weights(name)
	default:
		s.Channel, s.PrefixOrPermits = scripts.LockChannel(name), scripts.ForceUnlocked(name)
	}
	n, err := s.call().Run(ctx, c).Int64()
	switch {
	case err != nil:
		return false, err
	case n == -1:
		return false, ErrChanged
	}
	return n == 1, nil
}
