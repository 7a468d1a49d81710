package lease

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/relock-go/relock/internal/errs"
)

// ErrRenewed refuses an Extend of a lease the watchdog renews for as long as it is held.
var ErrRenewed = errors.New("the watchdog renews this hold's lease; Extend applies to a fixed lease (WithLeaseTime)")

// ErrEnded refuses an Extend of a lease already released.
var ErrEnded = errors.New("the hold has ended")

// MinLease is the shortest lease accepted: a holder is told of a loss a
// tick (10 ms) and 1% early, so a shorter lease would be lost at birth.
const MinLease = 30 * time.Millisecond

// ErrShorter refuses an Extend that would shorten the lease.
var ErrShorter = errors.New("Extend lengthens a lease")

// Extend makes a fixed lease end d after now, running its renew script with
// lease time d on every target at once, each bounded by timeout. Once a
// quorum renewed, the lease is tracked to its new end (re-entries write d);
// stragglers finish alone. Too few holders (keys gone) loses the lease; a
// network failure leaves it as it was. A d below what is left is refused
// (renew scripts never shorten a shared key's TTL). written: a quorum extended
// it in Redis, even if it was found lost meanwhile (the caller gives it back).
func (l *Lease) Extend(ctx context.Context, d, timeout time.Duration) (written bool, err error) {
	w := l.w
	w.mu.Lock()
	renewed, stopped, lost := l.spec.Renew, l.stopped, l.lostErr
	left := l.lossAt.Sub(w.clock.Now()) + w.margin(l.spec.Timeout)
	w.mu.Unlock()
	switch {
	case lost != nil:
		return false, lost
	case stopped:
		return false, ErrEnded
	case renewed:
		return false, ErrRenewed
	case d < left:
		return false, fmt.Errorf("%w: %v is shorter than the %v left", ErrShorter, d, left.Round(time.Millisecond))
	}
	sentAt := w.clock.Now()
	n := len(l.spec.Targets)
	answers := make(chan error, n) // room for every target: none blocks once decided
	for i := range l.spec.Targets {
		t := &l.spec.Targets[i]
		extend := func() {
			tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
			defer cancel()
			answers <- l.extendTarget(tctx, t, d)
		}
		if n == 1 {
			extend()
		} else {
			go extend() // every target at once; those left behind end with their timeout
		}
	}
	held, gone := 0, 0
	var failures []error
	for got := 0; got < n && held < l.spec.Quorum && n-gone-len(failures) >= l.spec.Quorum; got++ {
		switch err := <-answers; err {
		case nil:
			held++
		case errGone:
			gone++
		default:
			failures = append(failures, err)
		}
	}
	if held < l.spec.Quorum {
		if n-gone < l.spec.Quorum { // out of reach: the keys are gone
			l.Lose("the key was gone when the lease was extended")
			return false, l.Lost()
		}
		return false, fmt.Errorf("extended on %d of %d targets, quorum %d: %w", held, n, l.spec.Quorum, errors.Join(failures...))
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case l.lost:
		return true, l.lostErr
	case l.stopped:
		return true, ErrEnded
	}
	l.spec.Timeout = d
	l.setOKLocked(sentAt)
	w.scheduleLocked(l)
	return true, nil
}

// extendTarget runs t's renew script for this lease alone, lease time d: nil
// if the key was its, errGone if not.
func (l *Lease) extendTarget(ctx context.Context, t *Target, d time.Duration) error {
	rs := l.renewer(t)
	if rs == nil {
		return fmt.Errorf("%w: no renew script for the lease", errs.ErrInvalidArgument)
	}
	argv := make([]any, 0, len(t.Keys)+2)
	for _, k := range t.Keys {
		argv = append(argv, k)
	}
	argv = append(argv, d.Milliseconds(), t.Arg)
	res, err := rs.Lua.With(len(t.Keys), argv...).Run(ctx, t.Client).Int64Slice()
	if err == nil && (len(res) != 1 || res[0] != 1) {
		return errGone
	}
	return err
}
