package rwlock

import (
	"context"
	"time"

	"github.com/relock-go/relock/internal/conn"
	"github.com/relock-go/relock/internal/core"
)

// giveBack undoes, in the background, the grant an acquire that gave up
// may have left in Redis: its last try failed after the script may have
// run (a reply lost to a timeout or a broken connection). Without it the
// lock would stay taken by nobody until its lease ran out. A minted
// owner's field can only be that grant, released as any hold of the side
// is (nothing when it is not there); with a latch, the latch says whether
// that run counted (undo).
// A try the caller stopped waiting for (late, when not nil) is waited
// for first, so that the give-back comes after whatever it takes, and the
// give-back is then retried through an outage for up to the lease
// (core.GiveBack). Nothing of the caller waits for it.
func (rw *RWMutex) giveBack(ctx context.Context, s access, ownerID, latch string, late <-chan struct{}, leaseTime time.Duration) {
	ctx = conn.Detached(ctx) // each try ends with its retries
	window := rw.cfg.UnlockTimeout
	if late != nil {
		window = max(window, leaseTime)
	}
	core.GiveBack(late, window, func() error { return rw.undo(ctx, s, ownerID, latch) })
}

// undo gives back the count one acquisition of side s took (or may have
// taken), as giveBack describes, waking the waiters when the lock becomes
// free; retried for the unlock timeout, regardless of ctx's cancellation.
// With a latch, one script checks that the acquisition counted, takes the
// latch away and releases the count, so that a resent or retried undo
// gives the count back once; a latch that lapsed before the give-back
// came (core.LatchLife) leaves the count to its lease.
func (rw *RWMutex) undo(ctx context.Context, s access, ownerID, latch string) error {
	_, err := rw.releaseOnce(context.WithoutCancel(ctx), s, ownerID, rw.latch(), latch, rw.cfg.UnlockTimeout)
	return err
}
