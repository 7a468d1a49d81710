package core

import (
	"strconv"
	"strings"
	"time"
)

// A release can hand the lock straight to the head of the local queue: the
// releasing goroutine runs one script that frees its hold and takes the
// lock for the head's owner, and the head returns without a round trip of
// its own. The head must be idle (not in a try of its own, which could
// re-enter the lock it is being given) and claimable (its primitive said
// what it would write). A chain of hand-offs is bounded, so that waiters of
// other processes, who cannot be handed anything, get their turn: after
// MaxHandOffs in a row, or once the chain has lasted MaxHandOffTime, the
// lock is released through Redis for all to race.

// MaxHandOffs bounds the hand-offs in a row within one process: short
// critical sections pass the lock on at one round trip each, and the
// bound keeps the others' wait to a few of them.
const MaxHandOffs = 16

// MaxHandOffTime bounds how long a chain of hand-offs may keep the lock
// within one process. With long critical sections, sixteen of them in a
// row would shut the other processes out for seconds at a time; a
// release through Redis costs such a lock one round trip in many
// milliseconds.
const MaxHandOffTime = 50 * time.Millisecond

// chain is a channel's hand-offs in a row: how many, since the first.
type chain struct {
	n     int
	since time.Time
}

// Grant is what a hand-off gives the waiter: the fencing token of the hold
// the release's script took for it, and when that script was sent (on the
// waiter's clock, the start of its lease). A hold written by a release in
// another process comes in a message instead (GrantMessage): SentAt is
// zero, and TTL is the provisional TTL the release gave the hold, to be
// counted from the waiter's own last try (which came before the release).
type Grant struct {
	Token  int64
	SentAt time.Time
	TTL    time.Duration
	// NoneLeft: the release left nothing for the waiters behind this one
	// (a semaphore's permits all taken), so the next is promoted without
	// a try of its own, as behind a holder.
	NoneLeft bool
	// Owner is the owner a grant message wrote the hold for.
	Owner string
}

// grantPrefix starts a message that hands the lock to the waiter whose
// channel it is sent on: "relock:grant:<token>:<ttl ms>:<owner>" (a fair
// lock's release writes it; see lock's lua/wake.lua).
const grantPrefix = "relock:grant:"

// parseGrant reads a grant message.
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

// Claimant is a waiter's primitive, ready to take a lock a local release
// hands over: Granted takes it; Discard gives back one that came as the
// waiter gave up.
type Claimant interface {
	Granted(Grant)
	Discard(Grant)
}

// Claimant returns w's claim (JoinClaimant): set before w can be reserved,
// and never after, so a release reads it without the hub's lock.
func (w *Waiter) Claimant() Claimant { return w.claim }

// BeginTry reports whether w may try the lock now; false when a release is
// handing the lock to it (the hand-off's outcome comes as a wake, and a
// release that does not hand it over kicks it to make the try it was
// refused). EndTry must follow a true BeginTry.
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

// Pick says whom a release serves (Reserve), as each primitive needs:
//
//	Pick{Head: true}            a lock: the head of channel's queue, within
//	                            the chain bound
//	Pick{Seats: true}           a fair lock: the head of every taken seat of
//	                            the prefix channel (TakeSeat)
//	Pick{Max: n}                a semaphore: up to n claimants at the front
//	Pick{Max: n, Shared: true}  an rwlock writer: up to n readers at the front
type Pick struct {
	Head, Seats bool
	Max         int
	Shared      bool
}

// Reserve reserves, for a hand-off, the waiters pick names, returned in
// order in ws's room (room for one on the caller's stack spares a lock's
// release an allocation). End must follow each reservation. Only an idle
// claimant is reserved: not in a try of its own (which could re-enter the
// lock it is being given), leaving, or in another release's hand-off.
//
// Head serves the head alone, if it can be reserved; hand-offs in a row
// are bounded, so that waiters of other processes, who cannot be handed
// anything, get their turn. When the bound is reached, yield is true: the
// release goes through Redis and must not wake the local head itself
// (Release), so that it races the others on equal terms, woken by the same
// unlock message. The others have no chain bound: a fair lock's script
// serves the seat first in line in Redis, and a semaphore's or rwlock's
// line in Redis keeps the other processes' turn. A front ends at the first
// waiter of the other kind, or at a lone waiter without a claim (a
// semaphore's that cannot be handed anything); the idle claimants within
// it are reserved, the others passed over (their try, another release or
// the wake after this one serves them).
func (h *Hub) Reserve(channel string, pick Pick, ws []*Waiter) (_ []*Waiter, yield bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	ws = ws[:0]
	switch {
	case pick.Head:
		return h.reserveHeadLocked(channel, ws)
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

// reserveHeadLocked is Reserve's Head. A release that reserves nobody
// goes through Redis, which ends the chain.
func (h *Hub) reserveHeadLocked(channel string, ws []*Waiter) ([]*Waiter, bool) {
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
}

// reserveLocked reserves w; chained: its hand-off counts towards the
// chain bound.
func (w *Waiter) reserveLocked(chained bool) *Waiter {
	w.reserved = make(chan struct{})
	w.chained, w.missed = chained, false
	return w
}

// Settled reports whether no waiter of channel is in the middle of a try
// of its own, or of its Join, so that a release now may hand over to any
// of them: a test that means to watch a hand-off waits for it, rather
// than race a try.
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

// grantableLocked reports whether w can be given the lock now: it has a
// claim, is still waiting, alone (not a reader), and no hand-off is under
// way for it. (A release also needs it idle: idleLocked.)
func (w *Waiter) grantableLocked() bool {
	return w.claim != nil && !w.shared && !w.left && w.reserved == nil && !w.granted
}

// idleLocked reports whether w can be given the lock by a release: also
// not in a try of its own.
func (w *Waiter) idleLocked() bool { return w.grantableLocked() && !w.trying }

// Outcome is how a release ends a reservation (End).
type Outcome uint8

const (
	// Handed: the lock is the waiter's; it is woken to take it.
	Handed Outcome = iota
	// Refused: no hand-off, and the lock may be free (the release kept a
	// count, or failed). The waiter is kicked to try: a wake that came
	// while it was reserved was spent on a try BeginTry refused.
	Refused
	// Passed: no hand-off, for the waiter was not first in line. It is
	// kicked only if it was refused a try while reserved (woken, or not
	// yet in line at all).
	Passed
)

// End ends w's reservation with o; g is what the release's script
// returned when Handed.
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
		if w.missed {
			// A release came during the hand-off: something may be free
			// for the next waiter after all.
			g.NoneLeft = false
		}
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
