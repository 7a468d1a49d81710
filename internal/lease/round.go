package lease

import (
	"errors"
	"time"
)

// commit decides, in one critical section just before the pipeline is
// written, what it carries: renewals of leases stopped or lost meanwhile
// are dropped (a Stop that returned before this sees none of its renewals
// sent). Those of a round already decided by a quorum of other targets are
// kept: they keep the extra masters of a Redlock alive. It returns the
// earliest loss time of the leases kept, how many are kept, and whether any
// was dropped.
func (w *Watchdog) commit(calls []renewScriptCall) (deadline time.Time, live int, dropped bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for i := range calls {
		rs := calls[i].rs
		keep := rs[:0]
		for _, r := range rs {
			l := r.l
			if l.stopped || l.lost {
				dropped = true
				continue
			}
			if deadline.IsZero() || l.lossAt.Before(deadline) {
				deadline = l.lossAt
			}
			keep = append(keep, r)
		}
		calls[i].rs = keep
		live += len(keep)
	}
	return deadline, live, dropped
}

// completeLocked records one target's renewal result and decides the
// round as soon as it can: renewed (quorum), lost (key gone on more than
// len-quorum targets), or, once every target answered, retry soon.
func (w *Watchdog) completeLocked(r renewal, res error, sentAt, now time.Time) (lossNotice, bool) {
	l := r.l
	if r.round != l.round || !l.open {
		return lossNotice{}, false // decided already, or an older round
	}
	switch {
	case res == nil:
		l.okN++
	case errors.Is(res, errGone):
		l.goneN++
	default:
		l.errN++
		w.stats.errors.Add(1)
	}
	l.pending--
	if l.stopped || l.lost {
		l.open = false
		return lossNotice{}, false
	}
	n := len(l.spec.Targets)
	switch {
	case l.okN >= l.spec.Quorum:
		l.open = false
		w.stats.renewed.Add(1)
		w.metrics.Renewed(l.spec.Primitive, 1)
		if !sentAt.Before(l.lastOK) { // else a RetainAt sent later already moved it
			due := l.renewAt
			l.setOKLocked(sentAt)
			l.renewAt = nextRenewal(due, sentAt, l.spec.Timeout/3)
		}
		w.scheduleLocked(l)
	case l.goneN > n-l.spec.Quorum:
		l.open = false
		cbs := w.loseLocked(l, "key gone")
		if l.spec.Gone != nil {
			cbs = append(cbs, l.spec.Gone)
		}
		return lossNotice{cbs, l.lostErr}, true
	case l.pending == 0:
		l.open = false
		retry := now.Add(w.retryDelay(l.spec.Timeout))
		if retry.Before(l.lossAt) {
			l.renewAt = retry
		} else {
			l.renewAt = l.lossAt
		}
		w.scheduleLocked(l)
	}
	return lossNotice{}, false
}

// nextRenewal is when to renew next a lease whose renewal fell due at due
// and was sent at sentAt: due plus whole intervals, the first after sentAt.
// Each lease keeps its phase, so leases renewed in one round because the
// wheel ran late spread out again instead of staying one clump; and it is
// never later than sentAt+interval. (The loss time is from sentAt only.)
func nextRenewal(due, sentAt time.Time, interval time.Duration) time.Time {
	if interval <= 0 || due.After(sentAt) {
		return sentAt.Add(interval)
	}
	return due.Add((sentAt.Sub(due)/interval + 1) * interval)
}
