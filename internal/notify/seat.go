package notify

import (
	"slices"
	"strconv"
	"time"

	"github.com/relock-go/relock/internal/owner"
)

// A fair lock wakes each waiter alone, on a channel of its own. Were that
// channel named after each acquisition, every wait would cost a SUBSCRIBE
// and an UNSUBSCRIBE, the bulk of a fair lock's client time under
// contention. A seat is instead a waiter id of this hub, kept for the
// next waiter of the same lock once its waiter is done, with its channel
// still subscribed; seats nobody took for Linger are dropped with their
// subscriptions. A seat is held by one waiter at a time, so its channel
// still names one waiter; a message meant for the seat's last waiter (a
// grant that crossed its departure) names that waiter's owner and is not
// taken for the next one's (see deliver).

// seats are a lock's seats: the free ones and the taken ones (whose
// waiters a release may hand the lock to: ReserveSeated).
type seats struct {
	free  []string
	taken []string
	// idle drops the free seats Linger after the last was returned
	// (returned), unless one was taken meanwhile.
	idle     *time.Timer
	returned time.Time
}

// TakeSeat returns a waiter id for a lock whose waiters' channels are
// prefix + ":" + id: one free since its last waiter left (its channel
// likely still subscribed), or a new one, unique across processes. It
// must be returned with ReturnSeat.
func (h *Hub) TakeSeat(prefix string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	p := h.seats[prefix]
	if p == nil {
		p = &seats{}
		h.seats[prefix] = p
	}
	var id string
	if n := len(p.free); n > 0 {
		id, p.free = p.free[n-1], p.free[:n-1]
	} else {
		if h.id == "" {
			h.id = owner.Mint()
		}
		h.seatSeq++
		id = h.id + ":w" + strconv.FormatUint(h.seatSeq, 10)
	}
	p.taken = append(p.taken, id)
	channel := prefix + ":" + id
	q := h.queues[channel]
	if q == nil {
		q = &queue{}
		h.queues[channel] = q
	}
	q.seat = true
	return id
}

// ReturnSeat gives back a seat TakeSeat returned. reuse is false when the
// waiter may have left a place behind in Redis (its withdrawal failed):
// the next waiter must not inherit it, so the seat is dropped.
func (h *Hub) ReturnSeat(prefix, id string, reuse bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	p := h.seats[prefix]
	if p == nil {
		return
	}
	i := slices.Index(p.taken, id)
	if i < 0 {
		return
	}
	p.taken = slices.Delete(p.taken, i, i+1)
	if reuse {
		p.free = append(p.free, id)
	} else {
		h.dropSeatLocked(prefix + ":" + id)
	}
	if len(p.taken) > 0 {
		return
	}
	p.returned = time.Now()
	if p.idle == nil {
		p.idle = time.AfterFunc(Linger, func() { h.dropIdleSeats(prefix, p) })
	}
}

// dropIdleSeats drops p's seats, unless one was taken or returned within
// Linger (the timer is then armed again, not made anew on every return).
func (h *Hub) dropIdleSeats(prefix string, p *seats) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.seats[prefix] != p {
		return
	}
	if len(p.taken) > 0 {
		p.idle = nil // armed again by the last return
		return
	}
	if wait := Linger - time.Since(p.returned); wait > 0 {
		p.idle.Reset(wait)
		return
	}
	for _, id := range p.free {
		h.dropSeatLocked(prefix + ":" + id)
	}
	delete(h.seats, prefix)
}

// dropSeatLocked lets a seat's channel go as any channel goes: with its
// last waiter or watcher.
func (h *Hub) dropSeatLocked(channel string) {
	q := h.queues[channel]
	if q == nil {
		return
	}
	q.seat = false
	h.dropIfIdleLocked(channel, q)
}
