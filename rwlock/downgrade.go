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
	var derr error // the script's, read by a give-back only once it returned
	call := downgradeLua{
		Lock: rw.args.name, Channel: rw.args.channel, LeaseKeys: rw.timeoutPrefix(wh.Owner), TokenCounter: rw.args.token, Latch: rw.latch(),
		LeaseMS: cfg.Lease().Milliseconds(), Owner: wh.Owner, WriteOwner: wh.Owner + ":write", Publish: rw.args.publish,
		LatchLife: rw.cfg.LatchArg(rw.cfg.UnlockTimeout),
	}.call()
	err = conn.Within(ctx, rw.workers, rw.cfg.UnlockTimeout, func(ctx context.Context) error {
		// The latch makes a resend (go-redis's, after a lost reply) return
		// the first run's answer instead of converting a second count.
		vals, derr = call.Run(context.WithoutCancel(ctx), rw.client).Int64Slice()
		return derr
	})
	if err == nil && len(vals) != 2 {
		err = fmt.Errorf("unexpected reply %v", vals)
	}
	if err != nil {
		// The write hold is given up rather than left half-converted; a
		// script still on its way is waited for, and the read count it
		// made, if it ran, given back with it.
		late := conn.AfterLate(err)
		if late == nil {
			// Within what is left of the call's bound: a release Redis
			// holds off (BUSY) goes on in the background past it.
			rctx, cancel := context.WithDeadline(ctx, began.Add(rw.cfg.UnlockTimeout))
			_ = wh.Release(rctx)
			cancel()
			return nil, rw.id.Wrap("downgrade", err)
		}
		readLeft := true
		acquire.GiveBack(late, rw.cfg.UnlockTimeout, func() error {
			if readLeft && derr == nil && len(vals) == 2 && vals[0] != -1 {
				if _, err := rw.runRelease(context.WithoutCancel(ctx), read, wh.Owner, rw.cfg.UnlockTimeout); err != nil {
					return err
				}
			}
			readLeft = false
			return wh.Release(ctx)
		})
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
