package lease

import (
	"time"

	"github.com/relock-go/relock/internal/conn"
)

// Held returns the leases w tracks of the primitive's name on client. A
// ForceUnlock takes them before its script runs and declares them lost
// after it (LoseAll), so that its own process's holders learn of it at
// once, not at their next renewal; a hold that a waiter takes right after
// the unlock message is not among them. It scans the registry, which is
// fine for an operator's action.
func Held(w *Watchdog, client conn.Client, primitive, name string) []*Lease {
	w.mu.Lock()
	defer w.mu.Unlock()
	var found []*Lease
	for k, l := range w.registry {
		if k.client == client && l.spec.Primitive == primitive && l.spec.Name == name {
			found = append(found, l)
		}
	}
	return found
}

// LoseAll declares each of ls lost with reason.
func LoseAll(ls []*Lease, reason string) {
	for _, l := range ls {
		l.Lose(reason)
	}
}

// Remaining is how long the holder of l may still count on it: until the
// instant by which a renewal must succeed (0 once lost or stopped). With
// the watchdog renewing, it grows back after every renewal.
func Remaining(l *Lease) time.Duration {
	w := l.w
	w.mu.Lock()
	defer w.mu.Unlock()
	if l.lost || l.stopped {
		return 0
	}
	return max(l.lossAt.Sub(w.clock.Now()), 0)
}
