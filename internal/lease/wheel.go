package lease

import (
	"time"
)

func (w *Watchdog) tickOf(t time.Time) int64 {
	return int64(t.Sub(w.base) / w.tick)
}

// scheduleLocked puts l in the wheel at its next event.
func (w *Watchdog) scheduleLocked(l *Lease) {
	at := l.lossAt
	if next := l.nextRoundLocked(); !next.IsZero() && next.Before(at) {
		at = next
	}
	w.placeLocked(l, at)
}

// nextRoundLocked is l's next round (zero: none): renewAt, or resendAt while one is open.
func (l *Lease) nextRoundLocked() time.Time {
	switch {
	case !l.spec.Renew:
		return time.Time{}
	case l.open:
		return l.resendAt
	}
	return l.renewAt
}

func (w *Watchdog) placeLocked(l *Lease, at time.Time) {
	if l.inWheel {
		// Moved, not removed: the goroutine need not hear (a re-entry must not wake it).
		w.removeLocked(l)
	}
	l.slot = int(max(w.tickOf(at), w.cursor+1) % wheelSlots)
	w.slots[l.slot][l] = struct{}{}
	l.inWheel = true
	l.eventAt = at
	w.count++
	if l.atLoss = !at.Before(l.lossAt); l.atLoss {
		w.lossN[l.slot]++
	}
	due := w.noteDueLocked(l)
	if !w.running {
		w.running = true
		w.gen++
		go w.run(w.gen)
		return
	}
	if at.Before(w.wakeAt) {
		w.kickLocked() // due before the goroutine would wake
	}
	if w.flushing {
		if dueAt := w.base.Add(due); dueAt.Before(w.handoffAt) {
			// Due before the flushing goroutine would hand the wheel over.
			w.handoffAt = dueAt
			w.handoff.Reset(max(dueAt.Sub(w.clock.Now()), 0))
		}
	}
}

// noteDueLocked records in l's slot, and returns, when (offset from base) the
// wheel must turn for l: at its event at the loss time, else halfway from the
// renewal to the loss, leaving the renewal half its slack for its round trip.
// Never past the loss.
func (w *Watchdog) noteDueLocked(l *Lease) time.Duration {
	due := l.eventAt.Sub(w.base)
	if slack := l.lossAt.Sub(l.eventAt); slack > 0 {
		due += slack / 2
	}
	if l.atLoss {
		w.lossDue[l.slot] = min(w.lossDue[l.slot], due)
	} else {
		w.renewDue[l.slot] = min(w.renewDue[l.slot], due)
	}
	return due
}

func (w *Watchdog) removeLocked(l *Lease) {
	delete(w.slots[l.slot], l)
	l.inWheel = false
	w.count--
	if l.atLoss {
		if w.lossN[l.slot]--; w.lossN[l.slot] == 0 {
			w.lossDue[l.slot] = noDue
		}
	}
}

// dueLocked is the earliest instant the wheel must turn by (early, never late).
func (w *Watchdog) dueLocked() time.Time {
	m := noDue
	for i := range w.lossDue {
		m = min(m, w.lossDue[i], w.renewDue[i])
	}
	return w.base.Add(m)
}

func (w *Watchdog) kickLocked() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

func (w *Watchdog) unscheduleLocked(l *Lease) {
	if l.inWheel {
		w.removeLocked(l)
		// Let a goroutine asleep for long see the empty wheel (and exit
		// after idleLinger); one that wakes within idleLinger sees it then.
		if w.count == 0 && w.running && w.wakeAt.After(w.clock.Now().Add(idleLinger)) {
			w.kickLocked()
		}
	}
}

// renewal is one target of one lease to renew in this round.
type renewal struct {
	l      *Lease
	target int
	round  int
}

// advanceLocked processes every tick up to now.
func (w *Watchdog) advanceLocked(now time.Time) ([]renewal, []lossNotice) {
	var batch []renewal
	var lost []lossNotice
	end := w.tickOf(now)
	start := max(w.cursor+1, end-wheelSlots+1)
	w.cursor = max(w.cursor, end) // placements below land after the ticks processed here
	for t := start; t <= end; t++ {
		s := t % wheelSlots
		slot := w.slots[s]
		// Recomputed from the leases that stay and those placed here meanwhile.
		w.renewDue[s] = noDue
		w.lossDue[s] = noDue
		for l := range slot {
			if w.tickOf(l.eventAt) > end {
				w.noteDueLocked(l)
				continue // a later turn of the wheel
			}
			// A renewal due later in this tick joins this round (less than a tick
			// early: safe); a loss check keeps its instant (next tick).
			next := l.nextRoundLocked()
			renew := !next.IsZero() && next.Before(l.lossAt) && w.tickOf(next) <= end
			if l.eventAt.After(now) && !renew {
				w.placeLocked(l, l.eventAt) // due later in this tick: next tick
				continue
			}
			w.unscheduleLocked(l)
			switch {
			case !now.Before(l.lossAt):
				lost = append(lost, w.loseLocked(l, lossReason(l)))
			case renew:
				l.round++
				l.open = true
				l.pending = len(l.spec.Targets)
				l.okN, l.goneN = 0, 0
				for i := range l.spec.Targets {
					batch = append(batch, renewal{l, i, l.round})
				}
				// Resent a third of the lease on if still undecided (this round's answers
				// then ignored). One target: a resend would wait on the same server.
				l.resendAt = time.Time{}
				if len(l.spec.Targets) > 1 {
					l.resendAt = now.Add(l.spec.Timeout / 3)
				}
				w.scheduleLocked(l)
			default:
				w.scheduleLocked(l)
			}
		}
	}
	return batch, lost
}

// nextWakeLocked is how long to sleep until the next tick with an event due this turn.
func (w *Watchdog) nextWakeLocked(now time.Time) time.Duration {
	for i := int64(1); i <= wheelSlots; i++ {
		t := w.cursor + i
		var first time.Time
		for l := range w.slots[t%wheelSlots] {
			if w.tickOf(l.eventAt) <= t && (first.IsZero() || l.eventAt.Before(first)) {
				first = l.eventAt
			}
		}
		if !first.IsZero() {
			// Not before the tick begins, when advanceLocked takes the slot: a
			// lease moved here from the tick before would make it spin until then.
			if start := w.base.Add(time.Duration(t) * w.tick); first.Before(start) {
				first = start
			}
			return max(first.Sub(now), 0)
		}
	}
	return time.Duration(wheelSlots) * w.tick
}
