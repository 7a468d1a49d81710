package core

import (
	"context"
	"strconv"
	"strings"
	"time"
)

// A release can hand the lock straight to the head of the local queue, if
// idle (a try of its own could re-enter the lock it is given) and
// claimable: one script frees its hold and takes the lock for the head's
// owner, saving the head a round trip. Chains of hand-offs are bounded so
// that other processes' waiters get their turn, racing through Redis.

// MaxHandOffs bounds the hand-offs in a row within one process.
const MaxHandOffs = 16

// MaxHandOffTime bounds a chain's time too: MaxHandOffs long critical
// sections in a row would shut other processes out for seconds.
const MaxHandOffTime = 50 * time.Millisecond

// chain is a channel's hand-offs in a row: how many, since the first.
type chain struct {
	n     int
	since time.Time
}

// Grant is what a hand-off gives the waiter: its hold's token and when the
// release's script was sent (its lease's start). From a grant message
// (another process's release), SentAt is zero and TTL, the hold's
// provisional TTL, counts from the waiter's last try, before the release.
type Grant struct {
	Token  int64
	SentAt time.Time
	TTL    time.Duration
	// NoneLeft: the release left nothing for the waiters behind (a
	// semaphore's permits all taken): the next is promoted without a try.
	NoneLeft bool
	Owner    string // whom a grant message wrote the hold for
}

// grantPrefix starts a message that hands the lock to its channel's
// waiter: "relock:grant:<token>:<ttl ms>:<owner>" (lock's lua/wake.lua).
const grantPrefix = "relock:grant:"

func parseGrant(payload string) (Grant, bool) {
	rest, ok := strings.CutPrefix(payload, grantPrefix)
	if !ok {
		return Grant{}, false
	}
	tok, rest, ok1 := strings.Cut(rest, ":")
	ttl, owner, ok2 := strings.Cut(rest, ":")
	t, err1 := strconv.ParseInt(tok, 10, 64)
	ms, err2 := strconv.ParseInt(ttl, 10, 64)
	if !ok1 || !ok2 || owner == "" || err1 != nil || err2 != nil {
		return Grant{}, false
	}
	return Grant{Token: t, TTL: time.Duration(ms) * time.Millisecond, Owner: owner}, true
}

// Claimant is a waiter's primitive: Granted takes a lock a local release
// handed over; Discard gives back one that came as the waiter gave up.
// Declines, asked as the waiter joins (after the first try learned of any
// replicas), refuses every hand-off: a claim whose replica sync needs a
// WAIT, which a hold written by a release lacks.
type Claimant interface {
	Granted(Grant)
	Discard(Grant)
	Declines(ctx context.Context) bool
}

// Claimant returns w's claim (JoinClaimant): set before w can be reserved,
// and never after, so a release reads it without the hub's lock.
func (w *Waiter) Claimant() Claimant { return w.claim }

// BeginTry reports whether w may try the lock now: not once a release is
// handing it over (End then wakes w either way). EndTry must follow true.
func (w *Waiter) BeginTry() bool {
	w.h.mu.Lock()
	defer w.h.mu.Unlock()
	if w.reserved != nil {
		w.missed = true
		return false
	}
	if w.granted {
		return false
	}
	w.trying = true
	return true
}

// EndTry ends the try BeginTry allowed.
func (w *Waiter) EndTry() {
	w.h.mu.Lock()
	defer w.h.mu.Unlock()
	w.trying = false
}

// Pick says whom a release serves (Reserve):
//
//	Pick{Head: true}            a lock: the head, within the chain bound
//	Pick{Seats: true}           a fair lock: the head of each taken seat (TakeSeat)
//	Pick{Max: n}                a semaphore: up to n claimants at the front
//	Pick{Max: n, Shared: true}  an rwlock writer: up to n readers at the front
type Pick struct {
	Head, Seats bool
	Max         int
	Shared      bool
}

// Reserve reserves for a hand-off the idle claimants pick names, in order,
// in ws's room (room for one on the caller's stack spares an allocation);
// End must follow each. At the chain bound Head yields: the release goes
// through Redis and must not wake the local head (Release), which then
// races the others on equal terms. Other picks have no bound (the line in
// Redis keeps others' turn); a front ends at a waiter of the other kind or
// a lone one without a claim.
func (h *Hub) Reserve(channel string, pick Pick, ws []*Waiter) (_ []*Waiter, yield bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	ws = ws[:0]
	switch {
	case pick.Head: // reserving nobody ends the chain
		q := h.queues[channel]
		if q == nil || len(q.waiters) == 0 || !q.waiters[0].idleLocked() {
			delete(h.handOffs, channel)
			return ws, false
		}
		if c := h.handOffs[channel]; c.n >= MaxHandOffs || (c.n > 0 && time.Since(c.since) >= MaxHandOffTime) {
			delete(h.handOffs, channel)
			return ws, true
		}
		return append(ws, q.waiters[0].reserveLocked(true)), false
	case pick.Seats:
		if p := h.seats[channel]; p != nil {
			for _, id := range p.taken {
				if q := h.queues[channel+":"+id]; q != nil && len(q.waiters) > 0 && q.waiters[0].idleLocked() {
					ws = append(ws, q.waiters[0].reserveLocked(false))
				}
			}
		}
		return ws, false
	}
	if q := h.queues[channel]; q != nil {
		for _, w := range q.waiters {
			if len(ws) == pick.Max || w.shared != pick.Shared || w.left || (!w.shared && w.claim == nil) {
				break
			}
			if w.claim != nil && w.reserved == nil && !w.granted && !w.trying {
				ws = append(ws, w.reserveLocked(false))
			}
		}
	}
	return ws, false
}

// reserveLocked reserves w; chained: it counts towards the chain bound.
func (w *Waiter) reserveLocked(chained bool) *Waiter {
	w.reserved = make(chan struct{})
	w.chained, w.missed = chained, false
	return w
}

// Settled reports whether no waiter of channel is in a try or a Join, so a
// release now may hand over to any: tests wait for it to watch a hand-off.
func (h *Hub) Settled(channel string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if q := h.queues[channel]; q != nil {
		for _, w := range q.waiters {
			if w.trying || w.joining {
				return false
			}
		}
	}
	return true
}

// grantableLocked reports whether w is a waiting claimant, not a reader,
// with no hand-off due.
func (w *Waiter) grantableLocked() bool {
	return w.claim != nil && !w.shared && !w.left && w.reserved == nil && !w.granted
}

// idleLocked reports whether a release can give w the lock: grantable, not trying.
func (w *Waiter) idleLocked() bool { return w.grantableLocked() && !w.trying }

// Outcome is how a release ends a reservation (End).
type Outcome uint8

const (
	// Handed: the lock is the waiter's; it is woken to take it.
	Handed Outcome = iota
	// Refused: no hand-off, and the lock may be free (a count kept, a failed
	// release). The waiter is kicked: BeginTry may have refused its wake.
	Refused
	// Passed: no hand-off, the waiter not being first in line. It is
	// kicked only if it was refused a try while reserved.
	Passed
)

// End ends w's reservation with o; g is the script's grant when Handed.
func (w *Waiter) End(o Outcome, g Grant) {
	w.h.mu.Lock()
	defer w.h.mu.Unlock()
	close(w.reserved)
	w.reserved = nil
	switch {
	case o == Handed:
		if w.chained {
			c := w.h.handOffs[w.channel]
			if c.n++; c.n == 1 {
				c.since = time.Now()
			}
			w.h.handOffs[w.channel] = c
		}
		// A release came during the hand-off (missed): the next may find room.
		g.NoneLeft = g.NoneLeft && !w.missed
		w.grant, w.granted = g, true
	case o == Passed && !w.missed:
		return
	default:
		w.kicked = true
	}
	w.signal()
}

// Granted returns, and clears, the hand-off w was given, if any.
func (w *Waiter) Granted() (Grant, bool) {
	w.h.mu.Lock()
	defer w.h.mu.Unlock()
	g, ok := w.grant, w.granted
	w.grant, w.granted = Grant{}, false
	return g, ok
}
