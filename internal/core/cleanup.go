package core

import (
	"context"
	"time"

	"github.com/relock-go/relock/internal/conn"
	"github.com/relock-go/relock/internal/scripts"
)

// WithdrawBound caps how long a waiter that gave up spends taking its
// waiting mark back (the unlock timeout bounds it too): it is an
// optimisation, not worth holding a caller long.
const WithdrawBound = 250 * time.Millisecond

// WithdrawWait is how long a waiter that gave up waits for its
// withdrawal before it returns: on a healthy server it is done by then, so
// the next waiter finds no stale mark; on a stalled one the caller, whose
// wait is over, must not be held longer.
const WithdrawWait = 50 * time.Millisecond

// Withdraw runs withdraw, a script's call that takes back the waiting
// mark of a waiter that gave up (its wait ended: ctx done, the wait
// timeout, an error) and wakes the waiters the mark held back, so that
// they need not wait for the mark to expire.
//
// It is one call (go-redis's own retries aside), on ctx's values but not
// its cancellation, bounded by min(unlockTimeout, WithdrawBound). The
// caller waits for it up to WithdrawWait; the rest goes on in the
// background on the client's workers. It is not retried for the unlock
// timeout as a release is, since the withdrawal is only an optimisation. A
// mark left behind must therefore be safe: each primitive's marks grant
// nothing and expire. The error tells a caller that one may be left.
//
// after, when not nil, is a try still in flight (conn.AfterLate), which
// may write the mark when it lands: the withdrawal then waits for it, in
// the background, and Withdraw returns at once.
func Withdraw(ctx context.Context, after <-chan struct{}, c conn.Client, unlockTimeout time.Duration, withdraw scripts.Call) error {
	bound := min(unlockTimeout, WithdrawBound)
	ctx = context.WithoutCancel(ctx)
	var err error
	call := func() {
		wctx, cancel := context.WithTimeout(ctx, bound)
		defer cancel()
		err = withdraw.Run(wctx, c).Err()
	}
	if after != nil {
		go func() {
			<-after
			call()
		}()
		return nil
	}
	if late := conn.PoolFor(c).Bound(ctx, min(bound, WithdrawWait), call); late != nil {
		return late
	}
	return err
}

// GiveBack runs undo in the background, which gives back what an
// acquisition that gave up may have taken: after late (a try its caller
// stopped waiting for, when not nil) has returned, and again while undo
// fails with a transient error, for up to window. A try that a stalled
// server held runs when the server comes back, maybe after any give-back
// sent during the stall: the give-back must outlast the stall (window is
// the acquisition's lease, past which its grant lapses anyway). Its
// tries are spaced as a waiter's are (backoff): many acquisitions give up
// together when a server struggles, and must not press it in step.
func GiveBack(late <-chan struct{}, window time.Duration, undo func() error) {
	go func() {
		if late != nil {
			<-late
		}
		end := time.Now().Add(window)
		var bo backoff
		for {
			err := undo()
			left := time.Until(end)
			if err == nil || !conn.Transient(err) || left <= 0 {
				return
			}
			time.Sleep(min(bo.next(), left))
		}
	}()
}
