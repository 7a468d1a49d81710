package conn

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// shard is the pub/sub connection to one Redis node.
type shard struct {
	addr  string
	ps    *redis.PubSub
	ssub  bool                     // sharded pub/sub (cluster)
	chans map[string]*channelState // subscribed channels
	// own counts, per channel, the (S)UNSUBSCRIBE replies due for the
	// unsubscriptions sent on the connection. Until they come, a SUBSCRIBE
	// reply of the channel belongs to a subscription they ended (it comes
	// first), not to a later one. These replies are counted, not the
	// SUBSCRIBE replies due, for a channel unsubscribed while its
	// connection was down: go-redis subscribes again only the channels it
	// still has, so the SUBSCRIBE reply expected of it would never come,
	// and its next subscription would wait for ever. On a sharded
	// connection any other sunsubscribe is the server's own, dropping a
	// channel whose slot left the node (a resharding, a failover).
	own    map[string]int
	linger *time.Timer
	closed bool
	done   chan struct{} // closed with closed, ends the receive backoff
	// again: a resubscription of the channels a server refused for the
	// moment is due (resubscribeRefused).
	again bool
	order sendOrder // the SUBSCRIBEs sent, to place a refusal (pubsub_order.go)
}

// channelState counts SUBSCRIBEs sent and confirmed for one channel, so a
// waiter knows when Redis has processed the subscription it asked for.
type channelState struct {
	sent, confirmed int
	pending         []*Subscription
	// resync: the connection broke since the channel was last confirmed;
	// its listener hears Missed when the resubscription is confirmed.
	resync bool
	// refused: a busy or loading server refused its subscription, which
	// is sent again (resubscribeRefused).
	refused bool
}

// refusedRetry is how long after a server refused subscriptions for the
// moment (BUSY, LOADING) they are sent again.
const refusedRetry = 100 * time.Millisecond

func (ps *PubSub) shardLocked(ctx context.Context, channel string) (*shard, error) {
	client := ps.client.redis()
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
	if s := ps.shards[addr]; s != nil {
		return s, nil
	}
	s := &shard{addr: addr, chans: map[string]*channelState{}, own: map[string]int{}, done: make(chan struct{})}
	s.order.known = true // nothing sent yet
	if node != nil {
		s.ps, s.ssub = node.SSubscribe(ctx), true
	} else {
		s.ps = client.Subscribe(ctx)
	}
	ps.shards[addr] = s
	go ps.receive(s)
	return s, nil
}

func (ps *PubSub) subscribeLocked(ctx context.Context, channel string, l Listener) (*Subscription, error) {
	s, err := ps.shardLocked(ctx, channel)
	if err != nil {
		return nil, err
	}
	if s.linger != nil {
		s.linger.Stop()
		s.linger = nil
	}
	if err := ps.markLocked(ctx, s, channel); err != nil {
		ps.lingerIfIdleLocked(s)
		return nil, err // go-redis redials: the SUBSCRIBE would go where no order is known
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
		s.order.lose() // the connection may have been written, and redialled
		ps.forgetLocked(s, channel)
		ps.dropChannelLocked(s, channel)
		return nil, err
	}
	s.order.sent(channel)
	st.sent++
	sub := &Subscription{ps: ps, shard: s, channel: channel, l: l, target: st.sent, ready: make(chan struct{})}
	st.pending = append(st.pending, sub)
	ps.subs[channel] = sub
	return sub, nil
}

// resubscribeEach sends an SSUBSCRIBE of its own for each channel of s.
func (ps *PubSub) resubscribeEach(s *shard) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if s.closed {
		return
	}
	chans := make([]string, 0, len(s.chans))
	for ch := range s.chans {
		chans = append(chans, ch)
	}
	subscribeEachLocked(ps, s, chans)
}

// subscribeEachLocked subscribes chans on s again, within a second, one
// (S)SUBSCRIBE per channel: Redis refuses a command whole, for channels
// of several slots (CROSSSLOT) or for one the user may not access
// (NOPERM), and a channel sent alone takes its refusal alone. A marker
// goes first when s's order is lost (pubsub_order.go). A broken
// connection is retried by receive, and a refusal comes back to refused.
func subscribeEachLocked(ps *PubSub, s *shard, chans []string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if len(chans) == 0 || ps.markLocked(ctx, s, chans[0]) != nil {
		return
	}
	for _, ch := range chans {
		var err error
		if s.ssub {
			err = s.ps.SSubscribe(ctx, ch)
		} else {
			err = s.ps.Subscribe(ctx, ch)
		}
		s.order.sentOrLost(err, ch)
	}
}

// forgetLocked unsubscribes channel: a write on the socket; the reply comes
// through receive. Errors are moot: go-redis drops the channel from its set
// first, so a broken connection forgets it when it reconnects.
func (ps *PubSub) forgetLocked(s *shard, channel string) {
	ps.forgetAllWithin(s, []string{channel}, time.Second)
}

// forgetAllWithin unsubscribes channels (sharded: one by one), bounded by
// timeout (the write may redial a broken connection, under the lock).
func (ps *PubSub) forgetAllWithin(s *shard, channels []string, timeout time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if s.ssub {
		// One SUNSUBSCRIBE per channel: the server refuses channels of
		// several slots in one (CROSSSLOT).
		for _, ch := range channels {
			if err := s.ps.SUnsubscribe(ctx, ch); err == nil {
				s.own[ch]++
			} else {
				s.order.lose() // the connection may have been redialled
			}
		}
	} else if err := s.ps.Unsubscribe(ctx, channels...); err == nil {
		for _, ch := range channels {
			s.own[ch]++
		}
	} else {
		s.order.lose()
	}
}

func (ps *PubSub) dropChannelLocked(s *shard, channel string) {
	if st := s.chans[channel]; st != nil {
		for _, p := range st.pending {
			close(p.ready) // the waiter is gone or failed; never block on it
		}
		delete(s.chans, channel)
	}
	ps.lingerIfIdleLocked(s)
}

// lingerIfIdleLocked has s close PubSubLinger from now when it has no
// channel left.
func (ps *PubSub) lingerIfIdleLocked(s *shard) {
	if len(s.chans) == 0 && s.linger == nil {
		s.linger = time.AfterFunc(PubSubLinger, func() { ps.closeIdle(s) })
	}
}

func (ps *PubSub) closeIdle(s *shard) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if len(s.chans) != 0 || s.closed || ps.shards[s.addr] != s {
		return
	}
	s.closed = true
	close(s.done)
	delete(ps.shards, s.addr)
	_ = s.ps.Close()
}

// receive reads the shard's connection until it is closed, passing each
// channel's messages to its listener.
func (ps *PubSub) receive(s *shard) {
	backoff := 10 * time.Millisecond
	for {
		msg, err := s.ps.Receive(context.Background())
		var refused redis.Error
		if errors.As(err, &refused) && !strings.HasPrefix(refused.Error(), "READONLY") {
			ps.refused(s, err, refused)
			continue
		}
		if err != nil {
			if !ps.lost(s) {
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
			if l := ps.listener(m.Channel); l != nil {
				l.Message(m.Channel, m.Payload)
			}
		case *redis.Subscription:
			switch m.Kind {
			case "subscribe", "ssubscribe":
				ps.confirm(s, m.Channel)
			case "unsubscribe":
				ps.mu.Lock()
				if !s.order.answered(m.Channel) {
					ps.takeOwnLocked(s, m.Channel)
				}
				ps.mu.Unlock()
			case "sunsubscribe":
				if ps.dropped(s, m.Channel) {
					go ps.moveWhenKnown(s, []string{m.Channel})
				}
			}
		}
	}
}

// refused handles Redis refusing a (S)SUBSCRIBE (NOPERM, MOVED, BUSY...):
// the connection is intact and nothing was resubscribed, so the counts
// stay. A refusal for a channel's rights that the shard's order places
// (pubsub_order.go) fails the subscriptions of its command alone. A
// refusal for the moment (a server running a long script or loading its
// data: TryAgain) is sent again shortly, the waiting
// subscriptions waiting on: the refused command may be the resubscription
// of every channel after a reconnect, which would otherwise leave them
// unsubscribed for good while counted as subscribed. Otherwise the
// subscriptions that wait for a confirmation fail with err instead of
// waiting for ever, and a resubscription refused so fails its channel's
// subscription (a later Join subscribes afresh). A MOVED channel is moved
// to the slot's new node.
// The refusal may answer an (S)UNSUBSCRIBE instead (a node that no longer
// serves the slot refuses it too), whose reply own counts on: those of
// the slot (all, when the error names none) are no longer counted on, so
// that a later subscription of the channel is not refused its
// confirmation for good; at worst one is taken early, and a message
// missed then is made up by the waiters' fallback timers.
func (ps *PubSub) refused(s *shard, err error, refused redis.Error) {
	if s.ssub && strings.HasPrefix(refused.Error(), "CROSSSLOT") {
		// go-redis subscribes a broken connection's channels again in one
		// SSUBSCRIBE, which the server refuses when they sit in several
		// slots (the channels of several locks): send each alone. Their
		// confirmations stand for the one lost expected.
		ps.mu.Lock()
		s.order.lose()
		ps.mu.Unlock()
		go ps.resubscribeEach(s)
		return
	}
	ps.mu.Lock()
	if ps.refusedInOrderLocked(s, err, refused.Error()) {
		ps.mu.Unlock()
		return
	}
	s.order.lose() // this refusal may answer another command
	var moved []string
	slot, isMoved := Redirect(refused)
	later := TryAgain(err)
	denied := channelRefusal(refused.Error()) // answers a SUBSCRIBE, not an UNSUBSCRIBE
	for ch := range s.own {
		if !denied && (!isMoved || Slot(ch) == slot) {
			delete(s.own, ch)
		}
	}
	for ch, st := range s.chans {
		if later && (st.resync || len(st.pending) > 0) {
			st.refused = true
			continue
		}
		if denied && st.refused {
			continue // refused for the moment, not resent yet: no reply is due
		}
		// A MOVED names one slot, whose channels move (here, and in
		// lost); the others' confirmations still come.
		if isMoved && Slot(ch) != slot {
			continue
		}
		if len(st.pending) > 0 && s.ssub && isMoved {
			moved = append(moved, ch)
		}
		ps.failLocked(ch, st, err, !isMoved)
	}
	again := later && !s.again
	s.again = s.again || later
	ps.mu.Unlock()
	if len(moved) > 0 {
		go ps.moveWhenKnown(s, moved)
	}
	if again {
		go ps.resubscribeRefused(s)
	}
}

// failLocked fails the subscriptions of ch that wait for a confirmation
// with err, and, when it answers ch's resubscription (resubscribed), the
// live one too, which counts on it.
func (ps *PubSub) failLocked(ch string, st *channelState, err error, resubscribed bool) {
	if sub := ps.subs[ch]; resubscribed && st.resync && sub != nil && sub.err == nil {
		sub.err = err // Failed from now on
	}
	for _, p := range st.pending {
		p.err = err
		close(p.ready)
	}
	st.pending = nil
}

// resubscribeRefused sends again, refusedRetry after a refusal for the
// moment, the subscriptions it refused; a new refusal comes back to
// refused. A connection broken meanwhile subscribes them all again anyway.
func (ps *PubSub) resubscribeRefused(s *shard) {
	select {
	case <-time.After(refusedRetry):
	case <-s.done:
		return
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	s.again = false
	var chans []string
	for ch, st := range s.chans {
		if st.refused {
			st.refused = false
			chans = append(chans, ch)
		}
	}
	if !s.closed {
		subscribeEachLocked(ps, s, chans)
	}
}

// lost handles the shard's connection failing; it reports false when the
// shard was closed instead, and receive ends.
//
// Messages may have been lost while the connection was down: every
// listener hears Broken now, and Missed once the resubscription is
// confirmed (see confirm): while Redis stays unreachable the tries made
// now fail or miss a later unlock, and the reconnect that succeeds brings
// no error to wake anyone, so an unlock published during the outage would
// be noticed only at the TTL. Confirmations are counted afresh, since
// go-redis subscribes all channels again on reconnect; the replies due on
// the old connection will never come.
func (ps *PubSub) lost(s *shard) bool {
	ps.mu.Lock()
	if s.closed {
		ps.mu.Unlock()
		return false
	}
	clear(s.own)
	s.order.broken() // go-redis subscribes every channel again, on its own
	type heard struct {
		l  Listener
		ch string
	}
	var tell []heard
	for ch, st := range s.chans {
		st.sent, st.confirmed = 1, 0
		st.resync, st.refused = true, false
		for _, p := range st.pending {
			p.target = 1
		}
		if sub := ps.subs[ch]; sub != nil {
			tell = append(tell, heard{sub.l, ch})
		}
	}
	ps.mu.Unlock()
	for _, t := range tell {
		t.l.Broken(t.ch)
	}
	if s.ssub {
		// The node may have failed over: a channel whose slot has another
		// master now moves there (checked again at every retry of the
		// connection).
		ps.move(s, ps.channelsOf(s))
	}
	return true
}

func (ps *PubSub) confirm(s *shard, channel string) {
	ps.mu.Lock()
	s.order.confirmed(channel)
	if s.own[channel] > 0 {
		ps.mu.Unlock()
		return // the reply of a subscription since ended
	}
	st := s.chans[channel]
	if st == nil {
		ps.mu.Unlock()
		return
	}
	st.confirmed++
	st.refused = false
	var missed Listener
	if st.resync {
		// Subscribed again after a reconnect: a message published while
		// the connection was down was missed.
		st.resync = false
		if sub := ps.subs[channel]; sub != nil {
			missed = sub.l
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
	ps.mu.Unlock()
	if missed != nil {
		missed.Missed(channel)
	}
}
