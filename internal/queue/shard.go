package queue

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/internal/errs"
	"github.com/relock-go/relock/internal/keys"
)

// shard is the pub/sub connection to one Redis node.
type shard struct {
	addr  string
	ps    *redis.PubSub
	ssub  bool                     // sharded pub/sub (cluster)
	chans map[string]*channelState // subscribed channels
	// stale counts, per channel, the SUBSCRIBE replies still due for
	// subscriptions dropped before Redis confirmed them: they come ahead
	// of the reply to a later SUBSCRIBE of the channel and must not be
	// taken for its confirmation.
	stale map[string]int
	// own counts, per channel, the SUNSUBSCRIBE replies due for the
	// unsubscriptions the hub sent on a sharded connection: any other
	// sunsubscribe is the server's own, dropping a channel whose slot
	// left the node (a resharding, a failover).
	own    map[string]int
	linger *time.Timer
	closed bool
	done   chan struct{} // closed with closed, ends the receive backoff
}

// channelState counts SUBSCRIBEs sent and confirmed for one channel, so a
// waiter knows when Redis has processed the subscription it asked for.
type channelState struct {
	sent, confirmed int
	pending         []*subscription
	// resync: the connection broke since the channel was last confirmed;
	// its heads are woken when the resubscription is confirmed.
	resync bool
}

type subscription struct {
	shard   *shard
	channel string
	target  int
	ready   chan struct{}
	err     error // set before ready is closed when Redis refused the subscription
}

// failed reports whether Redis refused the subscription.
func (s *subscription) failed() bool {
	select {
	case <-s.ready:
		return s.err != nil
	default:
		return false
	}
}

func (h *Hub) shardLocked(ctx context.Context, channel string) (*shard, error) {
	client := h.client.Client()
	if client == nil {
		return nil, redis.ErrClosed // collected: no caller holds it
	}
	addr := ""
	var node *redis.Client
	if cc, ok := client.(*redis.ClusterClient); ok {
		n, err := cc.MasterForKey(ctx, channel)
		if err != nil {
			return nil, err
		}
		node, addr = n, n.Options().Addr
	}
	if s := h.shards[addr]; s != nil {
		return s, nil
	}
	s := &shard{addr: addr, chans: map[string]*channelState{}, stale: map[string]int{}, own: map[string]int{}, done: make(chan struct{})}
	if node != nil {
		s.ps, s.ssub = node.SSubscribe(ctx), true
	} else {
		s.ps = client.Subscribe(ctx)
	}
	h.shards[addr] = s
	go h.receive(s)
	return s, nil
}

func (h *Hub) subscribeLocked(ctx context.Context, channel string) (*subscription, error) {
	s, err := h.shardLocked(ctx, channel)
	if err != nil {
		return nil, err
	}
	if s.linger != nil {
		s.linger.Stop()
		s.linger = nil
	}
	if s.ssub {
		err = s.ps.SSubscribe(ctx, channel)
	} else {
		err = s.ps.Subscribe(ctx, channel)
	}
	st := s.chans[channel]
	if st == nil {
		st = &channelState{}
		s.chans[channel] = st
	}
	if err != nil {
		// go-redis keeps the channel in its set even when the SUBSCRIBE
		// could not be sent, and would subscribe it again on reconnect.
		h.forgetLocked(s, channel)
		h.dropChannelLocked(s, channel)
		return nil, err
	}
	st.sent++
	sub := &subscription{shard: s, channel: channel, target: st.sent, ready: make(chan struct{})}
	st.pending = append(st.pending, sub)
	return sub, nil
}

func (h *Hub) unsubscribeLocked(sub *subscription) {
	s := sub.shard
	if s.closed {
		return
	}
	h.forgetLocked(s, sub.channel)
	h.dropChannelLocked(s, sub.channel)
}

// unsubscribeAllLocked is unsubscribeLocked for many subscriptions, with
// one UNSUBSCRIBE per connection (one SUNSUBSCRIBE per slot: Redis
// refuses channels of several slots in one).
func (h *Hub) unsubscribeAllLocked(subs []*subscription) {
	type group struct {
		s    *shard
		slot int
	}
	groups := map[group][]string{}
	for _, sub := range subs {
		if sub.shard.closed {
			continue
		}
		g := group{s: sub.shard, slot: -1}
		if sub.shard.ssub {
			g.slot = keys.Slot(sub.channel)
		}
		groups[g] = append(groups[g], sub.channel)
	}
	for g, channels := range groups {
		h.forgetAllWithin(g.s, channels, time.Second)
		for _, ch := range channels {
			h.dropChannelLocked(g.s, ch)
		}
	}
}

// forgetLocked unsubscribes channel: a write on the socket; the reply comes
// through receive. Errors are moot: go-redis drops the channel from its set
// first, so a broken connection forgets it when it reconnects.
func (h *Hub) forgetLocked(s *shard, channel string) {
	h.forgetWithin(s, channel, time.Second)
}

// forgetWithin is forgetLocked bounded by timeout (the write may redial a
// broken connection, under the hub's lock).
func (h *Hub) forgetWithin(s *shard, channel string, timeout time.Duration) {
	h.forgetAllWithin(s, []string{channel}, timeout)
}

// forgetAllWithin unsubscribes channels in one command, bounded by
// timeout.
func (h *Hub) forgetAllWithin(s *shard, channels []string, timeout time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if s.ssub {
		if s.ps.SUnsubscribe(ctx, channels...) == nil {
			for _, ch := range channels {
				s.own[ch]++
			}
		}
	} else {
		_ = s.ps.Unsubscribe(ctx, channels...)
	}
}

func (h *Hub) dropChannelLocked(s *shard, channel string) {
	if st := s.chans[channel]; st != nil {
		if due := st.sent - st.confirmed; due > 0 {
			s.stale[channel] += due
		}
		for _, p := range st.pending {
			close(p.ready) // the waiter is gone or failed; never block on it
		}
		delete(s.chans, channel)
	}
	if len(s.chans) == 0 && s.linger == nil {
		s.linger = time.AfterFunc(Linger, func() { h.closeIdle(s) })
	}
}

func (h *Hub) closeIdle(s *shard) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(s.chans) != 0 || s.closed || h.shards[s.addr] != s {
		return
	}
	s.closed = true
	close(s.done)
	delete(h.shards, s.addr)
	_ = s.ps.Close()
}

// receive reads the shard's connection until it is closed, waking the
// waiters of each channel that gets a message.
func (h *Hub) receive(s *shard) {
	backoff := 10 * time.Millisecond
	for {
		msg, err := s.ps.Receive(context.Background())
		var refused redis.Error
		if errors.As(err, &refused) && !strings.HasPrefix(refused.Error(), "READONLY") {
			h.refused(s, err, refused)
			continue
		}
		if err != nil {
			if !h.lost(s) {
				return // closed
			}
			select {
			case <-time.After(backoff):
			case <-s.done:
				return
			}
			backoff = min(2*backoff, time.Second)
			continue
		}
		backoff = 10 * time.Millisecond
		switch m := msg.(type) {
		case *redis.Message:
			h.deliver(m.Channel, m.Payload)
		case *redis.Subscription:
			switch m.Kind {
			case "subscribe", "ssubscribe":
				h.confirm(s, m.Channel)
			case "sunsubscribe":
				if h.dropped(s, m.Channel) {
					go h.moveWhenKnown(s, []string{m.Channel})
				}
			}
		}
	}
}

// refused handles Redis refusing a (S)SUBSCRIBE (NOPERM, MOVED...): the
// connection is intact and nothing was resubscribed, so the counts stay,
// and the waiters that wait for a confirmation fail with err instead of
// waiting for ever. A MOVED channel is moved to the slot's new node.
func (h *Hub) refused(s *shard, err error, refused redis.Error) {
	var moved []string
	slot, isMoved := errs.Redirect(refused)
	h.mu.Lock()
	for ch, st := range s.chans {
		if len(st.pending) > 0 && s.ssub && isMoved && keys.Slot(ch) == slot {
			moved = append(moved, ch)
		}
		for _, p := range st.pending {
			p.err = err
			close(p.ready)
		}
		st.pending = nil
	}
	h.mu.Unlock()
	if len(moved) > 0 {
		go h.moveWhenKnown(s, moved)
	}
}

// lost handles the shard's connection failing; it reports false when the
// shard was closed instead, and receive ends.
//
// Messages may have been lost while the connection was down: every head
// retries now, and again once the resubscription is confirmed (see
// confirm): while Redis stays unreachable the tries made now fail or miss
// a later unlock, and the reconnect that succeeds brings no error to wake
// anyone, so an unlock published during the outage would be noticed only
// at the TTL. Confirmations are counted afresh, since go-redis subscribes
// all channels again on reconnect; the replies due on the old connection
// will never come.
func (h *Hub) lost(s *shard) bool {
	h.mu.Lock()
	if s.closed {
		h.mu.Unlock()
		return false
	}
	clear(s.stale)
	clear(s.own)
	for ch, st := range s.chans {
		st.sent, st.confirmed = 1, 0
		st.resync = true
		for _, p := range st.pending {
			p.target = 1
		}
		if q := h.queues[ch]; q != nil {
			q.wakeHead()
		}
	}
	h.mu.Unlock()
	if s.ssub {
		// The node may have failed over: a channel whose slot has another
		// master now moves there (checked again at every retry of the
		// connection).
		h.move(s, h.channelsOf(s))
	}
	return true
}

func (h *Hub) confirm(s *shard, channel string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if n := s.stale[channel]; n > 0 {
		if n == 1 {
			delete(s.stale, channel)
		} else {
			s.stale[channel] = n - 1
		}
		return
	}
	st := s.chans[channel]
	if st == nil {
		return
	}
	st.confirmed++
	if st.resync {
		// Subscribed again after a reconnect: an unlock published while
		// the connection was down was missed, so the heads try now.
		st.resync = false
		if q := h.queues[channel]; q != nil {
			q.heard()
		}
	}
	keep := st.pending[:0]
	for _, p := range st.pending {
		if p.target <= st.confirmed {
			close(p.ready)
		} else {
			keep = append(keep, p)
		}
	}
	st.pending = keep
}
