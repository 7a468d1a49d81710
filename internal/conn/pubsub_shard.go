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
	// own counts the (S)UNSUBSCRIBE replies due per channel; until they
	// come, a SUBSCRIBE reply belongs to a subscription they ended. (Not
	// SUBSCRIBE replies: go-redis does not resubscribe a channel dropped
	// while down.) Any other sunsubscribe is the server's: the slot left.
	own    map[string]int
	linger *time.Timer
	closed bool
	done   chan struct{} // closed with closed, ends the receive backoff
	// again: a resubscribeRefused is due.
	again bool
	order sendOrder // the SUBSCRIBEs sent, to place a refusal (pubsub_order.go)
}

// channelState counts one channel's SUBSCRIBEs sent and confirmed.
type channelState struct {
	sent, confirmed int
	pending         []*Subscription
	// resync: the connection broke since the channel was last confirmed;
	// its listener hears Missed when the resubscription is confirmed.
	resync bool
	// refused: BUSY or LOADING refused it; resubscribeRefused resends it.
	refused bool
}

// refusedRetry is when subscriptions refused by BUSY or LOADING go again.
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
		// go-redis keeps a channel it failed to send, and would
		// resubscribe it on reconnect.
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

// subscribeEachLocked subscribes chans on s again within a second, one
// (S)SUBSCRIBE each: Redis refuses a command whole (CROSSSLOT, NOPERM),
// so a channel sent alone takes its refusal alone.
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

// forgetLocked unsubscribes channel. Errors are moot: go-redis drops the
// channel first, so a reconnect forgets it.
func (ps *PubSub) forgetLocked(s *shard, channel string) {
	ps.forgetAllWithin(s, []string{channel}, time.Second)
}

// forgetAllWithin unsubscribes channels, within timeout (the write may
// redial a broken connection, under the lock).
func (ps *PubSub) forgetAllWithin(s *shard, channels []string, timeout time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if s.ssub {
		// One per channel: several slots in one is CROSSSLOT.
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

// lingerIfIdleLocked has s close PubSubLinger from now if it has no channel.
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

// receive reads the connection until it closes, passing on each message.
func (ps *PubSub) receive(s *shard) {
	backoff := 10 * time.Millisecond
	for {
		msg, err := s.ps.Receive(context.Background())
		var refused redis.Error
		if errors.As(err, &refused) && strings.HasPrefix(refused.Error(), "NOSUB") {
			ps.unsubscribedNone(s)
			continue
		}
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

// unsubscribedNone takes Valkey's NOSUB, its answer to an (S)UNSUBSCRIBE
// on a connection with no subscription (Redis answers with a count of 0):
// no subscription is refused. It answers the marker on its way, if any;
// else an unsubscription it does not name, so own stops counting on
// them, as for a refusal that names none.
func (ps *PubSub) unsubscribedNone(s *shard) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if s.order.marker != "" {
		s.order.answered(s.order.marker)
		return
	}
	clear(s.own)
}

// refused handles Redis refusing a (S)SUBSCRIBE; the connection is intact,
// so the counts stay. A NOPERM the order places fails its command alone;
// a TryAgain refusal (maybe of the resubscription of every channel) is
// resent shortly; otherwise waiting subscriptions fail with err, and a
// MOVED channel moves. As the refusal may answer an (S)UNSUBSCRIBE, own
// stops counting on the slot's replies (all, if it names none), lest a
// later subscription never be confirmed; a message missed by one taken
// early is made up by the waiters' fallback timers.
func (ps *PubSub) refused(s *shard, err error, refused redis.Error) {
	if s.ssub && strings.HasPrefix(refused.Error(), "CROSSSLOT") {
		// go-redis resubscribes a broken connection in one SSUBSCRIBE,
		// refused across slots: send each alone.
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
		// A MOVED names one slot; other channels' confirmations still come.
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

// failLocked fails ch's subscriptions waiting for a confirmation with err,
// and the live one too when err answers ch's resubscription.
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

// resubscribeRefused sends the subscriptions refused for the moment again,
// refusedRetry later; a new refusal comes back to refused.
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

// lost handles the connection failing; false means the shard was closed.
// Listeners hear Broken now and Missed once resubscribed: a reconnect
// wakes nobody, and an unlock published meanwhile would wait for the TTL.
// Confirmations are counted afresh: go-redis resubscribes every channel.
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
		// The node may have failed over: move channels whose slot has
		// another master now (checked again at every retry).
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
		// Resubscribed after a reconnect: a message may have been missed.
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
