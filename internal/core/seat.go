package core

import (
	"slices"
	"strconv"
	"time"

	"github.com/relock-go/relock/internal/conn"
)

// A fair lock wakes each waiter alone, on a channel of its own. Were that
// channel named after each acquisition, every wait would cost a SUBSCRIBE
// and an UNSUBSCRIBE, the bulk of a fair lock's client time under
// contention. A seat is instead a waiter id of this hub, kept for the
// next waiter of the same lock once its waiter is done, with its channel
// still subscribed; a free seat nobody took again for Linger is dropped
// with its subscription. A seat is held by one waiter at a time, so its channel
// still names one waiter; a message meant for the seat's last waiter (a
// grant that crossed its departure) names that waiter's owner and is not
// taken for the next one's (see deliver).

// seats are a lock's seats: the free ones, oldest first, and the taken
// ones (whose waiters a release may hand the lock to: Pick.Seats).
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
// prefix + ":" + id: the seat freed last (its channel likely still
// subscribed), or a new one, unique across processes. It must be
// returned with ReturnSeat.
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

// dropStaleSeats drops p's seats that lay free for Linger, and arms the
// timer again for the others.
func (h *Hub) dropStaleSeats(prefix string, p *seats) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.seats[prefix] != p {
		return
	}
	now := time.Now()
	n := 0
	for n < len(p.free) && now.Sub(p.free[n].returned) >= Linger {
		n++
	}
	stale := make([]string, n)
	for i, f := range p.free[:n] {
		stale[i] = f.id
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

// dropSeatsLocked lets the seats' channels go as any channel goes, with
// their last waiter or watcher: those idle now are unsubscribed together,
// one command per connection, since this runs under the hub's lock.
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
