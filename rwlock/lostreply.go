package rwlock

import (
	"context"
	"time"

	"github.com/relock-go/relock/internal/core"
)

// giveBack undoes, in the background, the grant a given-up acquire may
// have left when its last try's reply was lost, after any try still in
// flight (late); it retries through an outage for up to the lease
// (core.GiveBack).
func (rw *RWMutex) giveBack(ctx context.Context, s access, ownerID, latch string, late <-chan struct{}, leaseTime time.Duration) {
	window := rw.cfg.UnlockTimeout
	if late != nil {
		window = max(window, leaseTime)
	}
	core.GiveBack(ctx, late, window, func(ctx context.Context) error { return rw.undo(ctx, s, ownerID, latch) })
}

// undo gives back the count one acquisition of side s may have taken,
// retried for the unlock timeout despite ctx's cancellation. A minted
// owner's field can only be that grant; with a latch, one script releases
// the count once, only if that acquisition counted, and a lapsed latch
// (core.LatchLife) leaves the count to its lease.
func (rw *RWMutex) undo(ctx context.Context, s access, ownerID, latch string) error {
	_, err := rw.releaseOnce(context.WithoutCancel(ctx), s, ownerID, rw.latch(), latch, rw.cfg.UnlockTimeout)
	return err
}
