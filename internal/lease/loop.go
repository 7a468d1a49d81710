package lease

import (
	"time"
)

// run is the wheel's goroutine (generation gen); it exits once the wheel
// has been empty for idleLinger, or after a round whose reply outlived a handoff.
func (w *Watchdog) run(gen uint64) {
	timer := w.clock.NewTimer(time.Hour)
	timer.Stop() // armed below, at each turn
	defer timer.Stop()
	idle := time.NewTimer(idleLinger) // real time: a fake clock must not see it
	idle.Stop()                       // armed and stopped around each idle wait
	for {
		w.mu.Lock()
		if w.count == 0 {
			w.wakeAt = w.clock.Now().Add(idleLinger)
			w.mu.Unlock()
			idle.Reset(idleLinger)
			select {
			case <-idle.C:
			case <-w.kick:
			}
			idle.Stop()
			w.mu.Lock()
			if w.count == 0 {
				w.running = false
				w.mu.Unlock()
				return
			}
			w.mu.Unlock()
			continue
		}
		now := w.clock.Now()
		w.stats.turns.Add(1)
		batch, lost := w.advanceLocked(now)
		empty := w.count == 0
		sleep := w.nextWakeLocked(now)
		w.wakeAt = now.Add(sleep)
		if len(batch) > 0 {
			w.startFlushLocked(now)
		}
		w.mu.Unlock()

		for _, n := range lost {
			n.tell()
		}
		if len(batch) > 0 {
			w.send(batch, now)
			if !w.endFlush(gen) {
				return // handed over: another goroutine runs the wheel
			}
		}
		if empty {
			continue // to the idle wait
		}
		// After a slow round this is past: the timer fires at once and advanceLocked catches up.
		timer.ResetAt(now.Add(sleep))
		select {
		case <-timer.C():
		case <-w.kick:
			if !timer.Stop() {
				select {
				case <-timer.C():
				default:
				}
			}
		}
	}
}

// startFlushLocked arms the handoff: if the round is not done when the wheel
// must turn, another goroutine takes over (real time: fake clocks lack callbacks).
func (w *Watchdog) startFlushLocked(now time.Time) {
	w.flushing = true
	w.flushSeq++
	seq := w.flushSeq
	w.handoffAt = w.dueLocked()
	w.handoff = time.AfterFunc(max(w.handoffAt.Sub(now), 0), func() { w.handOver(seq) })
}

// endFlush ends goroutine gen's round; false if the wheel was handed over.
func (w *Watchdog) endFlush(gen uint64) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.gen != gen {
		return false
	}
	w.flushing = false
	w.handoff.Stop()
	w.handoff = nil
	return true
}

// handOver starts a new wheel goroutine if round seq still awaits its reply.
func (w *Watchdog) handOver(seq uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.flushing || w.flushSeq != seq {
		return
	}
	w.flushing = false
	w.handoff = nil
	w.gen++
	w.stats.handoffs.Add(1)
	go w.run(w.gen)
}
