package lock

import (
	"context"
	"time"

	"github.com/relock-go/relock/internal/conn"
	"github.com/relock-go/relock/internal/core"
)

// A reply lost after the acquire script ran (a read timeout, a broken
// connection) must not leave a grant in Redis that nobody was told of.
// acquire.lua can run twice for one acquisition in each of the modes
// (scripts.ModeMinted, scripts.ModeLatch), and giveBack undoes what an
// acquisition that gave up may have left.

// giveBack undoes, in the background, the grant an acquire that gave up
// may have left in Redis: its last try failed after the script may have
// run (a reply lost to a timeout or a broken connection). Without it the
// lock would stay taken by nobody until its lease ran out. The grant of a
// minted owner is its last count (unlock_last.lua frees it and wakes the
// waiters, or finds nothing); one with a latch is given back through it
// (give_back.lua undoes exactly the count that run added).
// A try the caller stopped waiting for (a.late) is waited for first, so
// that the give-back comes after whatever it takes; the give-back is
// retried through an outage for up to the lease (core.GiveBack). Nothing
// of the caller waits for it.
func (m *Mutex) giveBack(ctx context.Context, a *attempt) {
	ctx = conn.Detached(ctx) // each try ends with its retries
	window := m.cfg.UnlockTimeout
	if a.late != nil {
		window = max(window, a.lease)
	}
	core.GiveBack(a.late, window, func() error {
		if a.late != nil && a.queued {
			_ = m.withdraw(ctx, a.owner, a.seat) // the late try may have queued it
		}
		return m.undo(ctx, a.owner, a.latch, a.lease)
	})
}

// undo gives back the count one acquisition of owner took (or may have
// taken): through its acquire latch when it had one, else as the owner's
// last count (a re-entered member of a Redlock is decremented instead),
// waking the waiters when the lock becomes free. It is retried for the
// unlock timeout, regardless of ctx's cancellation.
func (m *Mutex) undo(ctx context.Context, owner, latch string, lease time.Duration) error {
	ctx = context.WithoutCancel(ctx)
	timeout := m.cfg.UnlockTimeout
	if latch != "" {
		n, err := m.scripts.giveBack(ctx, m, latch, owner).Retrying(ctx, m.client, timeout).Int64()
		if err == nil && n >= 1 {
			m.hub.Release(m.channel)
		}
		return err
	}
	_, err := m.releaseLast(ctx, owner, lease, timeout, false, nil)
	return err
}
