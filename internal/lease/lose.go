package lease

import (
	"time"

	"github.com/redis/go-redis/v9"
)

// LoseAll declares lost every lease w tracks of the primitive's name on
// client, with reason, and returns how many: a ForceUnlock made by this
// process ends its own holders at once, not at their next renewal. It
// scans the registry, which is fine for an operator's action.
func LoseAll(w *Watchdog, client redis.UniversalClient, primitive, name, reason string) int {
	w.mu.Lock()
	var found []*Lease
	for k, l := range w.registry {
		if k.client == client && l.spec.Primitive == primitive && l.spec.Name == name {
			found = append(found, l)
		}
	}
	w.mu.Unlock()
	for _, l := range found {
		l.Lose(reason)
	}
	return len(found)
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
