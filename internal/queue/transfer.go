package queue

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
// MaxHandOffs in a row the lock is released through Redis for all to race.

// MaxHandOffs bounds the hand-offs in a row within one process.
const MaxHandOffs = 16

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

// Claim makes w a waiter that a release may hand the lock to, for owner;
// claim is its primitive's side of the hand-off (which knows the lease
// the release writes for it).
func (w *Waiter) Claim(owner string, claim Claimant) {
	w.h.mu.Lock()
	defer w.h.mu.Unlock()
	w.owner, w.claim = owner, claim
}

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

// Reserve returns the head of channel's queue, reserved for a hand-off,
// or nil when there is none to hand to: no waiter, the head is shared, has
// no claim, is trying or leaving, or the chain of hand-offs is long
// enough. Grant or Refuse must follow a reservation. Yield reports that
// the chain bound was reached: the release goes through Redis and must not
// wake the local head itself (Release), so that it races the waiters of
// other processes on equal terms, woken by the same unlock message.
func (h *Hub) Reserve(channel string) (w *Waiter, claim Claimant, yield bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	q := h.queues[channel]
	if q == nil || len(q.waiters) == 0 {
		delete(h.handOffs, channel) // released through Redis: the chain ends
		return nil, nil, false
	}
	w = q.waiters[0]
	if !w.grantableLocked() || w.trying {
		delete(h.handOffs, channel)
		return nil, nil, false
	}
	if h.handOffs[channel] >= MaxHandOffs {
		delete(h.handOffs, channel)
		return nil, nil, true
	}
	w.reserved = make(chan struct{})
	w.chained = true
	return w, w.claim, false
}

// ReserveSeated reserves, for a hand-off, the waiter of every taken seat
// of prefix (TakeSeat) that has one to hand to (as Reserve judges it): a
// fair lock's waiters, each on its own channel, of which the release's
// script picks the one first in line in Redis, if any. There is no chain
// bound: the order in Redis is fair to other processes already. Grant or
// Unreserve must follow each reservation.
func (h *Hub) ReserveSeated(prefix string) (ws []*Waiter, claims []Claimant) {
	h.mu.Lock()
	defer h.mu.Unlock()
	p := h.seats[prefix]
	if p == nil {
		return nil, nil
	}
	for _, id := range p.taken {
		q := h.queues[prefix+":"+id]
		if q == nil || len(q.waiters) == 0 {
			continue
		}
		w := q.waiters[0]
		if !w.grantableLocked() || w.trying {
			continue
		}
		w.reserved = make(chan struct{})
		w.chained, w.missed = false, false
		ws, claims = append(ws, w), append(claims, w.claim)
	}
	return ws, claims
}

// ReserveFront reserves, for a hand-off, up to max waiters at the front of
// channel's queue, in order: a semaphore's release offers its permits to
// them, and its script serves them in that order while they fit. Waiters
// in a try of their own or in another release's hand-off are passed over
// (that release, or their try, serves them); the first waiter there is
// nothing to hand to at all (a reader, one without a claim) ends the
// front. There is no chain bound: a semaphore's line in Redis keeps the
// other processes' turn. Grant or Unreserve must follow each reservation.
func (h *Hub) ReserveFront(channel string, max int) (ws []*Waiter, claims []Claimant) {
	return h.reserveFront(channel, max, false)
}

// ReserveShared reserves, for a hand-off, the shared waiters (readers) at
// the front of channel's queue, up to max, in order: an rwlock's writer
// releasing takes the read lock for them in its script. Readers in a try
// of their own or without a claim are passed over (their try, or the
// wake that follows the release, serves them); the first waiter that is
// not shared ends the front. Grant, Refuse or Unreserve must follow each
// reservation.
func (h *Hub) ReserveShared(channel string, max int) (ws []*Waiter, claims []Claimant) {
	return h.reserveFront(channel, max, true)
}

// reserveFront reserves up to max idle claimants among the waiters at the
// front of channel's queue that are shared (readers) or not, as asked;
// the first other waiter ends the front, and so does one without a claim
// when not shared (a semaphore's waiter that cannot be handed anything).
func (h *Hub) reserveFront(channel string, max int, shared bool) (ws []*Waiter, claims []Claimant) {
	h.mu.Lock()
	defer h.mu.Unlock()
	q := h.queues[channel]
	if q == nil {
		return nil, nil
	}
	for _, w := range q.waiters {
		if len(ws) == max || w.shared != shared || w.left || (!shared && w.claim == nil) {
			break
		}
		if w.claim == nil || w.reserved != nil || w.granted || w.trying {
			continue
		}
		w.reserved = make(chan struct{})
		w.chained, w.missed = false, false
		ws, claims = append(ws, w), append(claims, w.claim)
	}
	return ws, claims
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

// Unreserve ends a reservation without a hand-off to w, which was not
// first in line: it is kicked to try only if it was refused a try while
// reserved (woken, or not yet in line at all).
func (w *Waiter) Unreserve() {
	w.h.mu.Lock()
	defer w.h.mu.Unlock()
	close(w.reserved)
	w.reserved = nil
	if w.missed {
		w.kicked = true
		w.signal()
	}
}

// grantableLocked reports whether w can be given the lock now: it has a
// claim, is still waiting, alone (not a reader), and no hand-off is under
// way for it. (A release also needs it idle: not in a try of its own.)
func (w *Waiter) grantableLocked() bool {
	return w.claim != nil && !w.shared && !w.left && w.reserved == nil && !w.granted
}

// Grant completes a hand-off: the lock is w's, with what the release's
// script returned (g); w is woken to take it.
func (w *Waiter) Grant(g Grant) {
	w.h.mu.Lock()
	defer w.h.mu.Unlock()
	if w.chained {
		w.h.handOffs[w.channel]++
	}
	if w.missed {
		// A release came during the hand-off: something may be free for
		// the next waiter after all.
		g.NoneLeft = false
	}
	w.grant, w.granted = g, true
	close(w.reserved)
	w.reserved = nil
	w.signal()
}

// Refuse ends a reservation without a hand-off (the release kept a count,
// or failed). w is kicked to try: a wake that came while it was reserved
// was spent on a try BeginTry refused, and the lock may be free now.
func (w *Waiter) Refuse() {
	w.h.mu.Lock()
	defer w.h.mu.Unlock()
	close(w.reserved)
	w.reserved = nil
	w.kicked = true
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

// Quit takes w out of its queue, as Leave does, in the same critical
// section that stops any further reservation of it; it then waits for a
// hand-off already under way and returns the lock if one was given: a
// waiter that gives up must give that back (one that acquired by itself
// keeps its own hold and ignores it).
func (w *Waiter) Quit(acquired bool, hold time.Duration) (Grant, bool) {
	w.h.mu.Lock()
	r := w.reserved
	w.h.removeLocked(w, acquired, hold)
	w.h.mu.Unlock()
	if r != nil {
		<-r
	}
	return w.Granted()
}
