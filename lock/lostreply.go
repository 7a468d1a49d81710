package lock

import (
	"context"
	"time"

	"github.com/relock-go/relock/internal/core"
)

// giveBack undoes, in the background, the grant a lost reply may have
// hidden from an acquire that gave up, which would keep the lock taken by
// nobody for a lease. It waits first for a try the caller stopped waiting
// for (a.late), and retries through an outage for up to the lease.
func (m *Mutex) giveBack(ctx context.Context, a *attempt) {
	window := m.cfg.UnlockTimeout
	if a.late != nil {
		window = max(window, a.lease)
	}
	core.GiveBack(ctx, a.late, window, func(ctx context.Context) error {
		if a.late != nil && a.queued {
			_ = m.withdraw(ctx, a.owner, a.seat) // the late try may have queued it
		}
		return m.undo(ctx, a.owner, a.latch, a.lease)
	})
}

// undo gives back the count one acquisition of owner may have taken:
// through its acquire latch (give_back.lua), else as the owner's last
// count (a re-entered Redlock member's is decremented instead), waking the
// waiters if the lock is freed; retried for the unlock timeout.
func (m *Mutex) undo(ctx context.Context, owner, latch string, lease time.Duration) error {
	ctx = context.WithoutCancel(ctx)
	timeout := m.cfg.UnlockTimeout
	if latch != "" {
		n, err := m.scripts.giveBack(ctx, m, latch, owner).Retrying(ctx, m.client.Client, timeout).Int64()
		if err == nil && n >= 1 {
			m.hub.Release(m.channel)
		}
		return err
	}
	_, err := m.releaseLast(ctx, owner, lease, timeout, false, nil)
	return err
}
