package lease

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/relock-go/relock/internal/errs"
)

// ErrRenewed refuses an Extend of a lease the watchdog renews: its length
// is the watchdog timeout's, renewed for as long as it is held.
var ErrRenewed = errors.New("the watchdog renews this hold's lease; Extend applies to a fixed lease (WithLeaseTime)")

// ErrEnded refuses an Extend of a lease already released.
var ErrEnded = errors.New("the hold has ended")

// Extend makes a fixed lease end d after now. It runs the lease's renew
// script (the one a watchdog renewal runs) on every target at once, with d
// as the lease time; when a quorum of the targets still held the lease, it
// is tracked to its new end (its next loss time, and the lease time a
// re-entry writes). When too few held it (their keys are gone), the lease
// is declared lost and Extend returns the loss. A failure to reach a
// target (the network) leaves the lease as it was, with the error.
func (l *Lease) Extend(ctx context.Context, d time.Duration) error {
	w := l.w
	w.mu.Lock()
	renewed, stopped, lost := l.spec.Renew, l.stopped, l.lostErr
	w.mu.Unlock()
	switch {
	case lost != nil:
		return lost
	case stopped:
		return ErrEnded
	case renewed:
		return ErrRenewed
	}
	sentAt := w.clock.Now()
	type answer struct {
		held bool
		err  error
	}
	answers := make(chan answer, len(l.spec.Targets))
	for i := range l.spec.Targets {
		t := &l.spec.Targets[i]
		extend := func() {
			held, err := l.extendTarget(ctx, t, d)
			answers <- answer{held, err}
		}
		if len(l.spec.Targets) == 1 {
			extend()
		} else {
			go extend() // every target at once; all are waited for below
		}
	}
	held, gone := 0, 0
	var failures []error
	for range l.spec.Targets {
		a := <-answers
		switch {
		case a.err != nil:
			failures = append(failures, a.err)
		case a.held:
			held++
		default:
			gone++
		}
	}
	if held < l.spec.Quorum {
		if len(l.spec.Targets)-gone < l.spec.Quorum { // out of reach: the keys are gone
			l.Lose("the key was gone when the lease was extended")
			return l.Lost()
		}
		return fmt.Errorf("extended on %d of %d targets, quorum %d: %w", held, len(l.spec.Targets), l.spec.Quorum, errors.Join(failures...))
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case l.lost:
		return l.lostErr
	case l.stopped:
		return ErrEnded
	}
	l.spec.Timeout = d
	if !sentAt.Before(l.lastOK) {
		l.setOKLocked(sentAt)
	}
	w.scheduleLocked(l)
	return nil
}

// extendTarget runs t's renew script for this lease alone with lease time
// d: held reports that the key was still the lease's.
func (l *Lease) extendTarget(ctx context.Context, t *Target, d time.Duration) (held bool, err error) {
	rs := t.Renewer
	if rs == nil {
		rs = l.spec.Renewer
	}
	if rs == nil {
		return false, fmt.Errorf("%w: no renew script for the lease", errs.ErrInvalidArgument)
	}
	argv := make([]any, 0, len(t.Keys)+1+len(t.Args))
	for _, k := range t.Keys {
		argv = append(argv, k)
	}
	argv = append(append(argv, d.Milliseconds()), t.Args...)
	res, err := rs.Lua.Call(ctx, t.Client, len(t.Keys), argv...).Int64Slice()
	if err != nil {
		return false, err
	}
	return len(res) == 1 && res[0] == 1, nil
}
