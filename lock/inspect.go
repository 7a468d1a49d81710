package lock

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/relock-go/relock/internal/core"
	"github.com/relock-go/relock/internal/scripts"
)

// ForceUnlock deletes the lock whoever holds it and wakes the waiters; it
// reports whether there was a lock. The holder's context ends with
// ErrLockLost: at once in this process (same client and watchdog), else at
// its next renewal.
func (m *Mutex) ForceUnlock(ctx context.Context) (bool, error) {
	if err := m.ident().Check("forceunlock", ctx, unmade); err != nil {
		return false, err
	}
	ok, err := core.ForceUnlockAndTell(ctx, m.client, m.cfg.UnlockTimeout, m.cfg.Watchdog, m.hub, core.KindLock, m.name, m.channel, "force-unlocked")
	return ok, m.id.Wrap("forceunlock", err)
}

// HoldCount returns how many times ctx's owner holds the lock (0 if not).
func (m *Mutex) HoldCount(ctx context.Context) (int, error) {
	if err := m.ident().Check("holdcount", ctx, unmade); err != nil {
		return 0, err
	}
	id, ok := core.OwnerOf(ctx, m.key())
	if !ok {
		return 0, nil
	}
	s, err := m.client.Query(ctx, m.cfg.UnlockTimeout, "hget", m.name, id).Text()
	if core.Absent(err) {
		return 0, nil
	}
	if err != nil {
		return 0, m.id.Wrap("holdcount", err)
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, m.id.Wrap("holdcount", fmt.Errorf("field is not a count: %q", s))
	}
	return n, nil
}

// IsLocked reports whether any owner holds the lock.
func (m *Mutex) IsLocked(ctx context.Context) (bool, error) {
	if err := m.ident().Check("islocked", ctx, unmade); err != nil {
		return false, err
	}
	n, err := m.client.Query(ctx, m.cfg.UnlockTimeout, "exists", m.name).Int64()
	if err != nil {
		return false, m.id.Wrap("islocked", err)
	}
	return n == 1, nil
}

// TTL returns how long the current hold lasts unless renewed: 0 when the
// lock is free, negative when the key has no expiry.
func (m *Mutex) TTL(ctx context.Context) (time.Duration, error) {
	if err := m.ident().Check("ttl", ctx, unmade); err != nil {
		return 0, err
	}
	d, err := m.client.Query(ctx, m.cfg.UnlockTimeout, "pttl", m.name).Millis()
	if err != nil {
		return 0, m.id.Wrap("ttl", err)
	}
	return scripts.TTL(d), nil
}
