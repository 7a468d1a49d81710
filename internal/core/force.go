package core

import (
	"context"
	"errors"
	"fmt"

	"github.com/relock-go/relock/internal/conn"
	"github.com/relock-go/relock/internal/errs"
	"github.com/relock-go/relock/internal/lease"
	"github.com/relock-go/relock/internal/scripts"
)

// The kinds of lock ForceUnlock knows, as Redis tells them apart (the
// hash's fields).
const (
	KindLock      = "lock"
	KindRWLock    = "rwlock"
	KindSemaphore = "semaphore"
)

// ClientClosed reports whether err is a call on a closed client, which no
// retry can mend: a candidate on one can never hold anything.
func ClientClosed(err error) bool { return errors.Is(err, conn.ErrClosed) }

// ErrChanged reports that a force unlock found the name held by another
// kind than the caller's (one name serves one kind): nothing was changed.
var ErrChanged = fmt.Errorf("%w: nothing done", errs.ErrWrongKind)

// ForceUnlockAndTell is ForceUnlock for a primitive: its holders in this
// process (their leases on wd and c) are declared lost with reason once
// the script has run, and its local waiters are woken on channel. The
// leases are taken before the script, so that a hold a local waiter takes
// right after the unlock message is not among them.
func ForceUnlockAndTell(ctx context.Context, c conn.Client, wd *lease.Watchdog, hub *Hub, kind, name, channel, reason string) (bool, error) {
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
