package core

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/relock-go/relock/internal/conn"
)

// Linger is how long an idle pub/sub connection stays open after its last
// channel is unsubscribed, and a free seat after its return, so that
// bursts of contention do not subscribe again.
const Linger = conn.PubSubLinger

// hubs holds the hub of each live client: dropped with the client, so that
// clients made per tenant or per request do not pile up hubs.
var hubs conn.Map[*Hub]

// For returns the hub of client, creating it on first use.
func For(client conn.Client) *Hub {
	return hubs.Get(client, newHub)
}

// Hub keeps the local lines of one Redis client's waiters. It hears the
// unlock messages through the client's conn.PubSub, which reaches the
// client through a weak reference: the hubs registry must not keep it
// alive.
type Hub struct {
	ps *conn.PubSub

	mu     sync.Mutex
	queues map[string]*line // channel -> local waiters
	// handOffs is, per channel, the chain of hand-offs in a row; kept
	// apart from the queue, which is dropped whenever it empties (but a
	// seat's).
	handOffs map[string]chain
	// seats are the fair locks' waiter ids, by channel prefix (seat.go);
	// id names this hub in them.
	seats   map[string]*seats
	id      string
	seatSeq uint64
}

func newHub(client conn.Client) *Hub {
	return &Hub{ps: conn.PubSubFor(client), queues: map[string]*line{}, handOffs: map[string]chain{}, seats: map[string]*seats{}}
}

// PublishCommand is the command an unlock script publishes with: SPUBLISH
// on a cluster (sharded pub/sub keeps the message on the lock's shard),
// PUBLISH elsewhere, as Redisson does.
func (h *Hub) PublishCommand() string { return h.ps.PublishCommand() }

// Freed tells channel's waiters that their lock is free though no release
// said so (a renewal found its key gone, after a flush): this process's at
// once, other processes' through the unlock message (Redisson's 0), which
// only the holder's process can send. It is sent in the background within
// timeout, as the watchdog's goroutine calls this.
func (h *Hub) Freed(channel string, timeout time.Duration) {
	h.Release(channel)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		_ = h.ps.Publish(ctx, channel, 0)
	}()
}

// Waiting reports whether goroutines of this process wait for channel's
// lock; a newcomer then queues behind them instead of trying at once.
func (h *Hub) Waiting(channel string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	q := h.queues[channel]
	return q != nil && len(q.waiters) > 0
}

// Queued is how many goroutines of this process wait for channel's lock.
func (h *Hub) Queued(channel string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	if q := h.queues[channel]; q != nil {
		return len(q.waiters)
	}
	return 0
}

// Release tells the hub that a goroutine of this process released channel's
// lock: the head of the local queue is woken at once, without waiting for
// the unlock message to come back from Redis.
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

	// joining: queued, Join not yet returned (see Settled).
	joining bool

	// Hand-offs; see transfer.go.
	owner    string
	claim    Claimant
	trying   bool
	reserved chan struct{} // closed when the release decided
	// chained: reserved by Pick.Head, whose hand-offs count towards the
	// chain bound; missed: a wake came while reserved.
	chained, missed bool
	grant           Grant
	granted         bool
}

// Wake is signalled when the waiter should try the lock again: it became
// the head of the queue, or an unlock message or a local release arrived
// while it was the head.
func (w *Waiter) Wake() <-chan struct{} { return w.wake }

// Head reports whether w is first in its queue (or in the run of shared
// waiters at the front).
func (w *Waiter) Head() bool {
	w.h.mu.Lock()
	defer w.h.mu.Unlock()
	q := w.h.queues[w.channel]
	return q != nil && q.isHead(w)
}

// Take returns, and clears, why the waiter was woken: kick means an unlock
// (message or local release) or the departure of a head that gave up, so
// the lock should be tried; hint > 0 means it was promoted to head behind a
// local goroutine that just acquired the lock, whose hold may last hint,
// so there is nothing to try yet but a fallback timer to arm.
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

// Join queues the calling goroutine for channel's lock and makes sure the
// hub is subscribed to channel (confirmed by Redis) before it returns, so
// that an unlock published after Join returns is not missed. shared
// waiters (readers) are woken together when they stand at the front.
func (h *Hub) Join(ctx context.Context, channel string, shared bool) (*Waiter, error) {
	return h.JoinClaimant(ctx, channel, shared, "", nil)
}

// JoinClaimant is Join for a waiter that a release may hand the lock to
// for owner (claim is its primitive's side: see Claim; nil for none). The
// claim is made as Join returns, under the hub's lock, so that a waiter
// is never seen queued and idle (Settled) yet not claimable.
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
		w.joining = false
		if claim != nil {
			w.owner, w.claim = owner, claim
		}
		h.mu.Unlock()
		return w, nil
	case <-ctx.Done():
		w.Leave(false, 0)
		return nil, context.Cause(ctx)
	}
}

// Leave takes w out of its queue. acquired says w leaves because it got
// the lock: the next waiter becomes head but is not woken to try (the lock
// is held; it will be woken by the release), and hold is how long that
// hold may last, its fallback timer; after a shared waiter got in, though,
// the new heads are woken to try (readers may join it, a writer must mark
// itself). Otherwise the next head is woken to try.
//
// Leaving stops any further reservation of w in the same critical section;
// Leave then waits for a hand-off already under way (its release waits on
// nothing of w's) and returns the lock if w was given it: a waiter that
// gives up must give that back (one that acquired by itself keeps its own
// hold and ignores it). A waiter without a claim is handed nothing.
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
	for i, o := range q.waiters {
		if o == w {
			q.waiters = append(q.waiters[:i], q.waiters[i+1:]...)
			break
		}
	}
	if h.dropIfIdleLocked(w.channel, q) {
		if !acquired {
			// Nobody holds the lock by a hand-off of this chain now (one
			// that did ends it on release, in Reserve): an idle name
			// keeps nothing in the hub.
			delete(h.handOffs, w.channel)
		}
		return
	}
	if wasHead {
		if acquired {
			for _, n := range q.heads() {
				if w.shared {
					// A reader got in: the readers beside it may too. A
					// writer now at the head must try at once as well, to
					// mark itself waiting: readers of other processes that
					// come and go hand over hand keep the lock from ever
					// falling free, so no unlock would wake it before its
					// fallback timer.
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

// queueLocked returns channel's queue, made if there is none.
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
	// watchers are called on each message of the channel (see Watch);
	// they keep the subscription as waiters do.
	watchers []*func(payload string)
	sub      *conn.Subscription
	// seat: the channel is a seat's, kept while the seat lives.
	seat bool
}

// heads returns the waiters at the front that may go together: the first
// one, and when it is shared, every shared waiter that follows it.
func (q *line) heads() []*Waiter {
	if len(q.waiters) == 0 {
		return nil
	}
	if !q.waiters[0].shared {
		return q.waiters[:1]
	}
	n := 1
	for n < len(q.waiters) && q.waiters[n].shared {
		n++
	}
	return q.waiters[:n]
}

func (q *line) isHead(w *Waiter) bool {
	for _, h := range q.heads() {
		if h == w {
			return true
		}
	}
	return false
}

func (q *line) wakeHead() {
	for _, w := range q.heads() {
		w.kicked = true
		w.signal()
	}
}

// subscribeLocked subscribes channel, its messages heard by the hub.
func (h *Hub) subscribeLocked(ctx context.Context, channel string) (*conn.Subscription, error) {
	return h.ps.Subscribe(ctx, channel, (*listener)(h))
}

// listener is how the transport reaches the hub; its methods run on a
// pub/sub connection's receiving goroutine.
type listener Hub

// Message handles an unlock message on channel.
func (l *listener) Message(channel, payload string) { (*Hub)(l).deliver(channel, payload) }

// Missed wakes channel's heads and watchers: a message may have been
// missed (resubscribed after a reconnect, or the channel's slot moved).
func (l *listener) Missed(channel string) {
	h := (*Hub)(l)
	h.mu.Lock()
	defer h.mu.Unlock()
	if q := h.queues[channel]; q != nil {
		q.heard("")
	}
}

// Broken wakes channel's heads: its connection failed, and an unlock
// may have been missed.
func (l *listener) Broken(channel string) {
	h := (*Hub)(l)
	h.mu.Lock()
	defer h.mu.Unlock()
	if q := h.queues[channel]; q != nil {
		q.wakeHead()
	}
}

// deliver handles an unlock message on channel.
func (h *Hub) deliver(channel, payload string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	q := h.queues[channel]
	if q == nil {
		return
	}
	if g, ok := parseGrant(payload); ok && len(q.waiters) > 0 {
		// The lock is this channel's waiter's already: it takes it
		// without a try, if it can be handed anything now; else its try
		// finds the hold its release wrote. A grant for another owner
		// was meant for a seat's last waiter: a plain wake.
		if w := q.waiters[0]; w.grantableLocked() && g.Owner == w.owner {
			w.grant, w.granted = g, true
			w.signal()
			return
		}
	}
	q.heard(payload)
}

// heard wakes the heads and calls the watchers with payload: a message
// came, or ("") may have been missed.
func (q *line) heard(payload string) {
	q.wakeHead()
	for _, f := range q.watchers {
		(*f)(payload)
	}
}

// Watch calls f with every message of channel (and with "" on a
// reconnect of its connection, when a message may have been missed) until
// stop is called.
// It shares the channel's subscription with its waiters and does not wait
// for Redis to confirm it. A message published before the watcher was
// listed, or before Redis took the SUBSCRIBE, reached no watcher, so f is
// also called with "" once the subscription is confirmed: at once when it
// is already, else when Redis confirms it (a holder then asks whether a
// ForceUnlock made elsewhere came in between). f runs under the hub's
// lock, on Watch's, the receiving or the confirming goroutine: it must
// only hand the work on (start a goroutine, signal a channel).
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
	stopped := make(chan struct{})
	if ready := q.sub.Ready(); !isClosed(ready) {
		go h.confirmed(q, q.sub, ready, fp, stopped)
	} else if q.sub.Err() == nil {
		f("")
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

// confirmed calls the watcher fp with "" once sub is ready, unless stopped
// first or Redis refused it (the watcher's fallback then stands). A sub
// moved to another node is ready too: the call comes early then, and
// Missed follows the new node's confirmation.
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

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

func (h *Hub) unwatchLocked(channel string, q *line, fp *func(payload string)) {
	for i, o := range q.watchers {
		if o == fp {
			q.watchers = append(q.watchers[:i], q.watchers[i+1:]...)
			break
		}
	}
	if h.queues[channel] == q {
		h.dropIfIdleLocked(channel, q)
	}
}

// dropIfIdleLocked drops channel's queue and its subscription when nobody
// waits on or watches it, and reports whether it was idle. A seat's
// channel (seat.go) keeps both, bar a subscription Redis refused.
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
