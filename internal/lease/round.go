package lease

import (
	"errors"
	"time"
)

// commit decides under the lock, just before the pipeline is written, what it
// carries: leases stopped or lost meanwhile are dropped (a returned Stop sends
// none); those of rounds already decided stay for a Redlock's extra masters.
// It returns the earliest loss time kept, the count kept and whether any dropped.
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

// completeLocked records a target's result and decides the round when it can:
// renewed (quorum), lost (gone on > len-quorum targets) or, all answered, retry.
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
		w.stats.errors.Add(1)
	}
	l.pending--
	if l.stopped || l.lost {
		l.open = false
		return lossNotice{}, false
	}
	switch {
	case l.okN >= l.spec.Quorum:
		l.open = false
		w.stats.renewed.Add(1)
		w.metrics.Renewed(l.spec.Primitive, 1)
		if due := l.renewAt; l.setOKLocked(sentAt) { // else a RetainAt sent later already moved it
			l.renewAt = nextRenewal(due, sentAt, l.spec.Timeout/3)
		}
		w.scheduleLocked(l)
	case l.goneN > len(l.spec.Targets)-l.spec.Quorum:
		l.open = false
		notice := w.loseLocked(l, "key gone")
		if l.spec.Gone != nil {
			notice.cbs = append(notice.cbs, l.spec.Gone)
		}
		return notice, true
	case l.pending == 0:
		l.open = false
		// Retried after a thirtieth of the lease (a tick to a second), by the loss time.
		if l.renewAt = now.Add(min(max(l.spec.Timeout/30, w.tick), time.Second)); !l.renewAt.Before(l.lossAt) {
			l.renewAt = l.lossAt
		}
		w.scheduleLocked(l)
	}
	return lossNotice{}, false
}

// nextRenewal is due plus whole intervals, the first after sentAt (never later
// than sentAt+interval): each lease keeps its phase, so leases a late wheel
// clumped into one round spread out again. The loss time counts from sentAt.
func nextRenewal(due, sentAt time.Time, interval time.Duration) time.Time {
	if interval <= 0 || due.After(sentAt) {
		return sentAt.Add(interval)
	}
	return due.Add((sentAt.Sub(due)/interval + 1) * interval)
}
