package core

import (
	"slices"
	"strconv"
	"time"

	"github.com/relock-go/relock/internal/conn"
)

// A fair lock wakes each waiter on its own channel. Rather than pay a
// SUBSCRIBE and UNSUBSCRIBE per wait, a seat (a waiter id of this hub) is
// reused by the lock's next waiter, still subscribed, until free for
// Linger. One waiter holds it at a time; a grant meant for its last waiter
// names that owner, so the next does not take it (see listener.Message).

// seats are a lock's seats: the free ones, oldest first, and the taken
// ones (Pick.Seats).
type seats struct {
	free  []freeSeat
	taken []string
	idle  *time.Timer // armed while a seat is free: drops the stale ones
}

type freeSeat struct {
	id       string
	returned time.Time
}

// TakeSeat returns a waiter id for a lock whose waiters' channels are
// prefix + ":" + id: the seat freed last (likely still subscribed), or a
// new one, unique across processes. ReturnSeat must follow.
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
		id, p.free = p.free[n-1].id, p.free[:n-1]
	} else {
		if h.id == "" {
			h.id = Mint()
		}
		h.seatSeq++
		id = h.id + ":w" + strconv.FormatUint(h.seatSeq, 10)
	}
	p.taken = append(p.taken, id)
	h.queueLocked(prefix + ":" + id).seat = true
	return id
}

// ReturnSeat gives back a seat TakeSeat returned; without reuse (the
// withdrawal failed, a place may be left in Redis) the seat is dropped.
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
	if !reuse {
		h.dropSeatsLocked(prefix, []string{id})
		h.forgetIdleLocked(prefix, p)
		return
	}
	p.free = append(p.free, freeSeat{id: id, returned: time.Now()})
	if p.idle == nil {
		p.idle = time.AfterFunc(Linger, func() { h.dropStaleSeats(prefix, p) })
	}
}

// dropStaleSeats drops p's seats free for Linger, and rearms for the others.
func (h *Hub) dropStaleSeats(prefix string, p *seats) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.seats[prefix] != p {
		return
	}
	now := time.Now()
	n := 0
	var stale []string
	for ; n < len(p.free) && now.Sub(p.free[n].returned) >= Linger; n++ {
		stale = append(stale, p.free[n].id)
	}
	p.free = slices.Delete(p.free, 0, n)
	h.dropSeatsLocked(prefix, stale)
	if len(p.free) > 0 {
		p.idle.Reset(Linger - now.Sub(p.free[0].returned))
		return
	}
	p.idle = nil
	h.forgetIdleLocked(prefix, p)
}

// forgetIdleLocked forgets a lock's seats once none is free or taken.
func (h *Hub) forgetIdleLocked(prefix string, p *seats) {
	if len(p.free) == 0 && len(p.taken) == 0 && p.idle == nil {
		delete(h.seats, prefix)
	}
}

// dropSeatsLocked lets the seats' channels go with their last waiter or
// watcher, unsubscribing idle ones in one command per connection.
func (h *Hub) dropSeatsLocked(prefix string, ids []string) {
	var subs []*conn.Subscription
	for _, id := range ids {
		channel := prefix + ":" + id
		q := h.queues[channel]
		if q == nil {
			continue
		}
		q.seat = false
		if len(q.waiters) != 0 || len(q.watchers) != 0 {
			continue
		}
		delete(h.queues, channel)
		if q.sub != nil {
			subs = append(subs, q.sub)
		}
	}
	h.ps.CancelAll(subs)
}
