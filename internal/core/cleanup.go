package core

import (
	"context"
	"time"

	"github.com/relock-go/relock/internal/conn"
	"github.com/relock-go/relock/internal/scripts"
)

// WithdrawBound caps how long a waiter that gave up spends taking its
// waiting mark back (as does the unlock timeout): only an optimisation.
const WithdrawBound = 250 * time.Millisecond

// WithdrawWait is how long a waiter that gave up waits for its withdrawal:
// a healthy server is done by then (the next waiter finds no stale mark),
// and a stalled one must not hold the caller longer.
const WithdrawWait = 50 * time.Millisecond

// Withdraw runs withdraw, which takes back the waiting mark of a waiter
// that gave up and wakes the waiters it held back. One call, unretried (a
// mark left grants nothing and expires; the error says one may be), on
// ctx's values only, bounded by min(unlockTimeout, WithdrawBound); the
// caller waits up to WithdrawWait, the rest runs in the background. after,
// if not nil, is a try in flight (conn.AfterLate) that may write the mark:
// the withdrawal waits for it in the background; Withdraw returns at once.
func Withdraw(ctx context.Context, after <-chan struct{}, c Client, unlockTimeout time.Duration, withdraw scripts.Call) error {
	bound := min(unlockTimeout, WithdrawBound)
	ctx = context.WithoutCancel(ctx)
	var err error
	call := func() {
		wctx, cancel := context.WithTimeout(ctx, bound)
		defer cancel()
		err = withdraw.Run(wctx, c.Client).Err()
	}
	if after != nil {
		go func() {
			<-after
			call()
		}()
		return nil
	}
	if late := c.workers.Bound(ctx, min(bound, WithdrawWait), call); late != nil {
		return late
	}
	return err
}

// GiveBack runs undo in the background, giving back what an acquisition
// that gave up may have taken: after late (a try it stopped waiting for)
// returns, and again while undo fails transiently for up to window (the
// lease), since a stalled try may land after a give-back. Retries back off
// with jitter, lest many acquisitions giving up press in step. undo gets
// ctx Detached: each try ends with its own retries.
func GiveBack(ctx context.Context, late <-chan struct{}, window time.Duration, undo func(ctx context.Context) error) {
	ctx = conn.Detached(ctx)
	go func() {
		if late != nil {
			<-late
		}
		end := time.Now().Add(window)
		var bo backoff
		for {
			err := undo(ctx)
			left := time.Until(end)
			if err == nil || !conn.Transient(err) || left <= 0 {
				return
			}
			time.Sleep(min(bo.next(), left))
		}
	}()
}
