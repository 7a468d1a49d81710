package lease

import (
	"time"

	"github.com/relock-go/relock/internal/conn"
)

// Held returns the leases w tracks of the primitive's name on client (a
// registry scan). ForceUnlock takes them before its script and loses them
// after (LoseAll), so this process's holders learn at once; a hold a waiter
// takes right after the unlock message is not among them.
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

// Remaining is how long l's holder may still count on it (0 once lost or
// stopped); with the watchdog renewing, it grows back after every renewal.
func Remaining(l *Lease) time.Duration {
	w := l.w
	w.mu.Lock()
	defer w.mu.Unlock()
	if l.lost || l.stopped {
		return 0
	}
	return max(l.lossAt.Sub(w.clock.Now()), 0)
}
