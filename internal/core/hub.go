package core

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/relock-go/relock/internal/conn"
)

// Linger is how long an idle pub/sub connection, or a free seat, is kept
// so that bursts of contention do not subscribe again.
const Linger = conn.PubSubLinger

// hubs holds each live client's hub, dropped with the client so that
// clients made per tenant or request do not pile up hubs.
var hubs = conn.NewPerClient(newHub)

// For returns the hub of client, creating it on first use.
func For(client conn.Client) *Hub { return hubs.For(client) }

// Hub keeps one Redis client's local lines of waiters, hearing unlock
// messages through its conn.PubSub (which holds the client weakly).
type Hub struct {
	ps *conn.PubSub

	mu     sync.Mutex
	queues map[string]*line // channel -> local waiters
	// handOffs is each channel's chain of hand-offs in a row, kept apart
	// from the queue, which is dropped whenever it empties.
	handOffs map[string]chain
	// seats are the fair locks' waiter ids by channel prefix (seat.go);
	// id names this hub in them.
	seats   map[string]*seats
	id      string
	seatSeq uint64
}

func newHub(client conn.Client) *Hub {
	return &Hub{ps: conn.PubSubFor(client), queues: map[string]*line{}, handOffs: map[string]chain{}, seats: map[string]*seats{}}
}

// PublishCommand is the command unlock scripts publish with: SPUBLISH on
// a cluster (the message stays on the lock's shard), else PUBLISH.
func (h *Hub) PublishCommand() string { return h.ps.PublishCommand() }

// Freed tells channel's waiters their lock is free though no release said
// so (a renewal found its key gone): this process's at once, others' by an
// unlock message (Redisson's 0) sent in the background within timeout.
func (h *Hub) Freed(channel string, timeout time.Duration) {
	h.Release(channel)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		_ = h.ps.Publish(ctx, channel, 0)
	}()
}

// Waiting reports whether local goroutines wait for channel's lock.
func (h *Hub) Waiting(channel string) bool { return h.Queued(channel) > 0 }

// Queued is how many goroutines of this process wait for channel's lock.
func (h *Hub) Queued(channel string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	if q := h.queues[channel]; q != nil {
		return len(q.waiters)
	}
	return 0
}

// Release wakes channel's heads after a local release, before Redis's message.
func (h *Hub) Release(channel string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if q := h.queues[channel]; q != nil {
		q.wakeHead()
	}
}

// Waiter is one goroutine's place in a lock's local queue.
type Waiter struct {
	h       *Hub
	channel string
	shared  bool
	wake    chan struct{}
	left    bool
	kicked  bool          // see Take
	hint    time.Duration // see Take
	joining bool          // queued, Join not yet returned (see Settled)

	// Hand-offs (transfer.go).
	owner    string
	claim    Claimant
	trying   bool
	reserved chan struct{} // closed when the release decided
	// chained: reserved by Pick.Head, counting towards the chain bound;
	// missed: a wake came while reserved.
	chained, missed bool
	grant           Grant
	granted         bool
}

// Wake is signalled when the waiter became head or should try (Take).
func (w *Waiter) Wake() <-chan struct{} { return w.wake }

// Head reports whether w is at the front of its queue (heads).
func (w *Waiter) Head() bool {
	w.h.mu.Lock()
	defer w.h.mu.Unlock()
	q := w.h.queues[w.channel]
	return q != nil && q.isHead(w)
}

// Take returns, and clears, why the waiter was woken: kick, the lock may be
// free (an unlock, a head gave up); hint > 0, it was promoted behind a
// local goroutine that just acquired, whose hold may last hint.
func (w *Waiter) Take() (kick bool, hint time.Duration) {
	w.h.mu.Lock()
	defer w.h.mu.Unlock()
	kick, hint = w.kicked, w.hint
	w.kicked, w.hint = false, 0
	return kick, hint
}

func (w *Waiter) signal() {
	if w.reserved != nil {
		w.missed = true
	}
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// Join queues the calling goroutine for channel's lock and returns once
// Redis confirmed the hub's subscription, so no later unlock is missed.
// shared waiters (readers) at the front are woken together.
func (h *Hub) Join(ctx context.Context, channel string, shared bool) (*Waiter, error) {
	return h.JoinClaimant(ctx, channel, shared, "", nil)
}

// JoinClaimant is Join for a waiter that a release may hand the lock to
// for owner (claim: nil for none). The claim is set under the hub's lock
// as Join returns, so a waiter is never idle (Settled) yet unclaimable.
func (h *Hub) JoinClaimant(ctx context.Context, channel string, shared bool, owner string, claim Claimant) (*Waiter, error) {
	w := &Waiter{h: h, channel: channel, shared: shared, wake: make(chan struct{}, 1), joining: true}
	h.mu.Lock()
	q := h.queueLocked(channel)
	q.waiters = append(q.waiters, w)
	if q.sub != nil && q.sub.Failed() {
		q.sub.Cancel() // a seat's, kept: subscribe afresh
		q.sub = nil
	}
	if q.sub == nil {
		sub, err := h.subscribeLocked(ctx, channel)
		if err != nil {
			h.removeLocked(w, false, 0)
			h.mu.Unlock()
			return nil, err
		}
		q.sub = sub
	}
	sub, ready := q.sub, q.sub.Ready()
	h.mu.Unlock()

	select {
	case <-ready:
		if err := sub.Err(); err != nil {
			w.Leave(false, 0)
			return nil, err
		}
		h.mu.Lock()
		w.joining, w.owner, w.claim = false, owner, claim // owner counts only with a claim
		h.mu.Unlock()
		return w, nil
	case <-ctx.Done():
		w.Leave(false, 0)
		return nil, context.Cause(ctx)
	}
}

// Leave takes w out of its queue. The new heads are woken to try, unless w
// acquired and is not shared: then they wait for its release, hold being
// their fallback timer. Leave bars further reservations of w, waits for a
// hand-off under way (whose release waits on nothing of w's) and returns
// what w was given: a waiter that gives up must give it back.
func (w *Waiter) Leave(acquired bool, hold time.Duration) (Grant, bool) {
	w.h.mu.Lock()
	r := w.reserved
	w.h.removeLocked(w, acquired, hold)
	w.h.mu.Unlock()
	if r != nil {
		<-r
	}
	return w.Granted()
}

func (h *Hub) removeLocked(w *Waiter, acquired bool, hold time.Duration) {
	if w.left {
		return
	}
	w.left = true
	q := h.queues[w.channel]
	if q == nil {
		return
	}
	wasHead := q.isHead(w)
	if i := slices.Index(q.waiters, w); i >= 0 {
		q.waiters = slices.Delete(q.waiters, i, i+1)
	}
	if h.dropIfIdleLocked(w.channel, q) {
		if !acquired {
			// No one holds the lock by this chain now (a holder ends it on
			// release, in Reserve): an idle name keeps nothing in the hub.
			delete(h.handOffs, w.channel)
		}
		return
	}
	if wasHead {
		if acquired {
			for _, n := range q.heads() {
				if w.shared {
					// Readers may join a reader. A writer head tries at
					// once to mark itself: other processes' readers, hand
					// over hand, may never let the lock fall free.
					n.kicked = true
				} else {
					n.hint = hold
				}
				n.signal()
			}
		} else {
			q.wakeHead()
		}
	}
}

func (h *Hub) queueLocked(channel string) *line {
	q := h.queues[channel]
	if q == nil {
		q = &line{}
		h.queues[channel] = q
	}
	return q
}

type line struct {
	waiters []*Waiter
	// watchers are called on each message (Watch); they keep the
	// subscription as waiters do.
	watchers []*func(payload string)
	sub      *conn.Subscription
	seat     bool // a seat's channel, kept while the seat lives
}

// heads returns the front waiters that go together: the first, or a shared run.
func (q *line) heads() []*Waiter {
	n := 0
	for n < len(q.waiters) && (n == 0 || q.waiters[0].shared && q.waiters[n].shared) {
		n++
	}
	return q.waiters[:n]
}

func (q *line) isHead(w *Waiter) bool { return slices.Contains(q.heads(), w) }

func (q *line) wakeHead() {
	for _, w := range q.heads() {
		w.kicked = true
		w.signal()
	}
}

func (h *Hub) subscribeLocked(ctx context.Context, channel string) (*conn.Subscription, error) {
	return h.ps.Subscribe(ctx, channel, (*listener)(h))
}

// listener is the hub as the transport calls it, on a receiving goroutine.
type listener Hub

// Missed wakes heads and watchers, as a message with no grant: one may be
// lost (resubscribed, slot moved).
func (l *listener) Missed(channel string) { l.Message(channel, "") }

// Broken wakes channel's heads: its connection failed, maybe losing an unlock.
func (l *listener) Broken(channel string) { (*Hub)(l).Release(channel) }

// Message handles an unlock message on channel.
func (l *listener) Message(channel, payload string) {
	h := (*Hub)(l)
	h.mu.Lock()
	defer h.mu.Unlock()
	q := h.queues[channel]
	if q == nil {
		return
	}
	if g, ok := parseGrant(payload); ok && len(q.waiters) > 0 {
		// The lock is the head's already: it takes it without a try if it
		// is grantable now, else its try finds the hold. A grant for
		// another owner was a seat's last waiter's: a plain wake.
		if w := q.waiters[0]; w.grantableLocked() && g.Owner == w.owner {
			w.grant, w.granted = g, true
			w.signal()
			return
		}
	}
	q.heard(payload)
}

// heard wakes the heads and calls the watchers ("": a message may be lost).
func (q *line) heard(payload string) {
	q.wakeHead()
	for _, f := range q.watchers {
		(*f)(payload)
	}
}

// Watch calls f with every message of channel until stop, and with ""
// when one may have been missed: on a reconnect, and once the shared
// subscription, which Watch does not wait for, is confirmed (a holder then
// asks whether a ForceUnlock came in between). f runs under the hub's
// lock, on any of several goroutines: it must only hand the work on.
func (h *Hub) Watch(ctx context.Context, channel string, f func(payload string)) (stop func(), err error) {
	fp := &f
	h.mu.Lock()
	defer h.mu.Unlock()
	q := h.queueLocked(channel)
	q.watchers = append(q.watchers, fp)
	if q.sub == nil {
		sub, err := h.subscribeLocked(ctx, channel)
		if err != nil {
			h.unwatchLocked(channel, q, fp)
			return nil, err
		}
		q.sub = sub
	}
	stopped, ready := make(chan struct{}), q.sub.Ready()
	select {
	case <-ready:
		if q.sub.Err() == nil {
			f("")
		}
	default:
		go h.confirmed(q, q.sub, ready, fp, stopped)
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			close(stopped)
			h.mu.Lock()
			defer h.mu.Unlock()
			h.unwatchLocked(channel, q, fp)
		})
	}, nil
}

// confirmed calls fp with "" once sub is ready, unless stopped or refused.
// A sub moved to another node is ready early; Missed follows.
func (h *Hub) confirmed(q *line, sub *conn.Subscription, ready <-chan struct{}, fp *func(string), stopped <-chan struct{}) {
	select {
	case <-ready:
	case <-stopped:
		return
	}
	if sub.Err() != nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if slices.Contains(q.watchers, fp) {
		(*fp)("")
	}
}

func (h *Hub) unwatchLocked(channel string, q *line, fp *func(payload string)) {
	if i := slices.Index(q.watchers, fp); i >= 0 {
		q.watchers = slices.Delete(q.watchers, i, i+1)
	}
	if h.queues[channel] == q {
		h.dropIfIdleLocked(channel, q)
	}
}

// dropIfIdleLocked drops an unwaited, unwatched queue and its subscription
// (a seat's keeps both, bar a refused one) and reports whether it was idle.
func (h *Hub) dropIfIdleLocked(channel string, q *line) bool {
	if len(q.waiters) != 0 || len(q.watchers) != 0 {
		return false
	}
	if q.seat {
		if q.sub != nil && q.sub.Failed() {
			q.sub.Cancel()
			q.sub = nil
		}
		return true
	}
	delete(h.queues, channel)
	if q.sub != nil {
		q.sub.Cancel()
	}
	return true
}
