package rwlock

import (
	"context"
	"fmt"
	"time"

	"github.com/relock-go/relock/internal/core"
)

// Downgrade turns the write hold that returned ctx into a read hold in one
// script, so no other writer can get in between. It returns the read
// hold's context (made from the write hold's acquiring context) and ends
// the write hold's. Waiting readers are woken when no write count remains.
func (rw *RWMutex) Downgrade(ctx context.Context) (context.Context, error) {
	if err := rw.ident().Check("downgrade", ctx, unmade); err != nil {
		return nil, err
	}
	wh, parent, err := core.Detach(ctx, rw.key(write), &rw.holds)
	if err != nil {
		return nil, rw.id.Wrap("downgrade", err)
	}
	cfg := rw.heldConfig(wh)
	wd := rw.cfg.Watchdog
	sentAt := wd.Now()
	began := time.Now()
	var vals []int64
	var derr error // the call's own, read by the give-up once it returned
	latch := rw.latch()
	call := downgradeLua{
		Lock: rw.args.name, Channel: rw.args.channel, LeaseKeys: rw.timeoutPrefix(wh.Owner), TokenCounter: rw.args.token, Latch: latch,
		LeaseMS: cfg.Lease().Milliseconds(), Owner: wh.Owner, WriteOwner: wh.Owner + ":write", Publish: rw.args.publish,
		LatchLife: rw.cfg.LatchArg(rw.cfg.UnlockTimeout),
	}.call()
	err = rw.client.Within(ctx, rw.cfg.UnlockTimeout, func(ctx context.Context) error {
		// The latch makes a resend return the first run's answer.
		vals, derr = call.Run(context.WithoutCancel(ctx), rw.client.Client).Int64Slice()
		return derr
	})
	if err == nil && len(vals) != 2 {
		err = fmt.Errorf("unexpected reply %v", vals)
	}
	if err != nil {
		late, _ := core.Lost(err)
		rw.giveUpDowngrade(ctx, wh, latch, late, began, func() int { return downgradeRan(vals, derr) })
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

// downgradeRan tells from a returned downgrade call whether its script
// converted a count: 1 yes, 0 no (or Redis refused it), -1 unknown (reply lost).
func downgradeRan(vals []int64, err error) int {
	switch {
	case err == nil && len(vals) == 2 && vals[0] == -1:
		return 0
	case err == nil && len(vals) == 2:
		return 1
	case err != nil && core.Answered(err):
		return 0
	}
	return -1
}

// giveUpDowngrade gives wh up after a failed downgrade, undoing what the
// script did: the read count it made if it converted, else the write
// count. On a lost reply the downgrade's latch (left only by a converting
// run) decides while it would still live; after that both counts lapse.
// Each release keeps one latch across retries, so none counts twice. A late
// call, or an undo past its bound, is finished in the background.
func (rw *RWMutex) giveUpDowngrade(ctx context.Context, wh *core.Hold, downgradeLatch string, late <-chan struct{}, began time.Time, ran func() int) {
	last := wh.Lease.Release()
	wh.Close()
	g := downgradeGiveUp{rw: rw, wh: wh, last: last, latch: downgradeLatch, trustUntil: began.Add(time.Duration(core.LatchLife(rw.cfg.UnlockTimeout)-
		rw.cfg.UnlockTimeout.Milliseconds()) * time.Millisecond), readLatch: rw.latch(), writeLatch: rw.latch(), ran: -2, outcome: ran}
	if late == nil {
		rctx, cancel := context.WithDeadline(ctx, began.Add(rw.cfg.UnlockTimeout))
		err := g.undo(rctx)
		cancel()
		if err == nil || !core.Transient(err) {
			return
		}
		late, _ = core.Lost(err)
	}
	core.GiveBack(ctx, late, rw.cfg.UnlockTimeout, g.undo)
}

// downgradeGiveUp is the state of one giveUpDowngrade across its tries.
type downgradeGiveUp struct {
	rw                    *RWMutex
	wh                    *core.Hold
	last                  bool
	latch                 string    // the downgrade's
	trustUntil            time.Time // the latch's absence says it did not run
	readLatch, writeLatch string
	ran                   int // -2 not known yet, -1 unknown, 0 no, 1 yes
	readDone              bool
	outcome               func() int
}

func (g *downgradeGiveUp) undo(ctx context.Context) error {
	rw, timeout := g.rw, g.rw.cfg.UnlockTimeout
	if g.ran == -2 {
		g.ran = g.outcome()
	}
	if pastDeadline(ctx) {
		return context.DeadlineExceeded // the caller's bound: the rest goes on in the background
	}
	if g.ran == -1 {
		res, err := rw.releaseOnce(ctx, read, g.wh.Owner, g.readLatch, g.latch, timeout)
		switch {
		case err != nil:
			return err
		case res != -2:
			g.ran, g.readDone = 1, true
		case time.Now().Before(g.trustUntil):
			g.ran = 0
		default:
			return nil // the latch may have lapsed: leave both to their leases
		}
	}
	if g.ran == 1 && !g.readDone {
		if _, err := rw.releaseOnce(ctx, read, g.wh.Owner, g.readLatch, "", timeout); err != nil {
			return err
		}
		g.readDone = true
	}
	res := int64(1) // the downgrade ended the write count
	if g.ran == 0 && pastDeadline(ctx) {
		return context.DeadlineExceeded
	}
	if g.ran == 0 {
		var err error
		if res, err = rw.releaseOnce(ctx, write, g.wh.Owner, g.writeLatch, "", timeout); err != nil {
			return err
		}
	}
	rw.dropLabel(ctx, g.wh, write, g.last && res != -1)
	return nil
}

// pastDeadline reports whether ctx's deadline, if any, has passed: a
// call made with it would wait a whole timeout of its own (CallerWait).
func pastDeadline(ctx context.Context) bool {
	dl, ok := ctx.Deadline()
	return ok && !time.Now().Before(dl)
}
