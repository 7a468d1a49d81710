package rwlock

import (
	"context"
	"fmt"
	"time"

	"github.com/relock-go/relock/internal/acquire"
	"github.com/relock-go/relock/internal/conn"
	"github.com/relock-go/relock/internal/hold"
)

// Downgrade turns the write hold that returned ctx into a read hold, in
// one script, so no other writer can get in between. It returns the read
// hold's context (made from the write hold's acquiring context); the write hold's
// context ends. Waiting readers are woken when no write count remains.
func (rw *RWMutex) Downgrade(ctx context.Context) (context.Context, error) {
	if err := rw.ident().Check("downgrade", ctx, unmade); err != nil {
		return nil, err
	}
	wh, parent, err := hold.Detach(ctx, rw.key(write), &rw.holds)
	if err != nil {
		return nil, rw.id.Wrap("downgrade", err)
	}
	cfg := rw.heldConfig(wh)
	wd := rw.cfg.Watchdog
	sentAt := wd.Now()
	began := time.Now()
	var vals []int64
	latch := rw.latch()
	call := downgradeLua{
		Lock: rw.args.name, Channel: rw.args.channel, LeaseKeys: rw.timeoutPrefix(wh.Owner), TokenCounter: rw.args.token, Latch: latch,
		LeaseMS: cfg.Lease().Milliseconds(), Owner: wh.Owner, WriteOwner: wh.Owner + ":write", Publish: rw.args.publish,
		LatchLife: rw.cfg.LatchArg(rw.cfg.UnlockTimeout),
	}.call()
	err = conn.Within(ctx, rw.workers, rw.cfg.UnlockTimeout, func(ctx context.Context) error {
		// The latch makes a resend (go-redis's, after a lost reply) return
		// the first run's answer instead of converting a second count.
		var err error
		vals, err = call.Run(context.WithoutCancel(ctx), rw.client).Int64Slice()
		return err
	})
	if err == nil && len(vals) != 2 {
		err = fmt.Errorf("unexpected reply %v", vals)
	}
	if err != nil {
		rw.giveUpDowngrade(ctx, wh, latch, conn.AfterLate(err), began)
		return nil, rw.id.Wrap("downgrade", err)
	}
	wh.Lease.Release()
	wh.Close()
	if vals[0] == -1 {
		return nil, rw.id.Wrap("downgrade", fmt.Errorf("%w: the write lock was no longer held in Redis", ErrLockLost))
	}
	rw.hub.Release(rw.channel)
	held, err := rw.newHold(parent, cfg, read, wh.Owner, false, vals[0], vals[1], sentAt, cfg.Lease(), wh.Traced)
	if err != nil {
		return nil, rw.id.Wrap("downgrade", err)
	}
	return held, nil
}

// giveUpDowngrade gives the write hold wh up after a downgrade that
// failed, undoing exactly what the script did if it ran: its latch says
// so (the script leaves it only when it converted a count). Then the read
// count it made goes and the write count it converted is gone already;
// otherwise the write count goes. One release script checks and takes the
// latch, so that a retry cannot release the wrong side, and each release
// keeps one latch of its own across retries, so that none counts twice.
// The lease stops at once: what cannot be undone lapses with it. A script
// still on its way (late) is waited for first, and the give-back retried
// in the background; otherwise it runs within what is left of the call's
// bound.
func (rw *RWMutex) giveUpDowngrade(ctx context.Context, wh *hold.Hold, downgradeLatch string, late <-chan struct{}, began time.Time) {
	last := wh.Lease.Release()
	wh.Close()
	readLatch, writeLatch := rw.latch(), rw.latch()
	ran := -1 // unknown; 1 the downgrade ran, 0 it did not
	undo := func(ctx context.Context) error {
		timeout := rw.cfg.UnlockTimeout
		if ran < 0 {
			res, err := rw.releaseOnce(ctx, read, wh.Owner, readLatch, downgradeLatch, timeout)
			if err != nil {
				return err
			}
			ran = 0
			if res != -2 {
				ran = 1
			}
		}
		res := int64(1) // the downgrade ended the write count
		if ran == 0 {
			var err error
			if res, err = rw.releaseOnce(ctx, write, wh.Owner, writeLatch, "", timeout); err != nil {
				return err
			}
		}
		rw.dropLabel(ctx, wh, write, last && res != -1)
		return nil
	}
	if late == nil {
		// A release Redis holds off (BUSY) goes on in the background past
		// the bound.
		rctx, cancel := context.WithDeadline(ctx, began.Add(rw.cfg.UnlockTimeout))
		_ = undo(rctx)
		cancel()
		return
	}
	ctx = conn.Detached(ctx) // each try ends with its retries
	acquire.GiveBack(late, rw.cfg.UnlockTimeout, func() error { return undo(ctx) })
}
