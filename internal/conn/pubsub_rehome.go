package conn

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"
)

// When a channel's slot moves, the old node sunsubscribes it or stops
// answering; the subscription moves to the new master, and its listener
// hears Missed at once. A move that waits for the slot map runs on a
// goroutine that ends within 2 s or with the shard.

// movePolls bounds the wait, one poll every movePoll, for the client's
// slot map (reloaded in the background) to name the slot's new master.
const (
	movePolls = 40
	movePoll  = 50 * time.Millisecond
)

// dropped handles a sunsubscribe on s: the reply to one sent here, or
// the server dropping a channel whose slot it left (move is true).
func (ps *PubSub) dropped(s *shard, channel string) (move bool) {
	ps.mu.Lock()
	if s.order.answered(channel) || ps.takeOwnLocked(s, channel) {
		ps.mu.Unlock()
		return false
	}
	if s.chans[channel] == nil {
		ps.mu.Unlock()
		return false
	}
	sub := ps.subs[channel]
	ps.mu.Unlock()
	if sub != nil {
		sub.l.Missed(channel) // the lock may have moved with the slot, freed meanwhile
	}
	return true
}

// takeOwnLocked counts off a due unsubscription reply of channel, if any.
func (ps *PubSub) takeOwnLocked(s *shard, channel string) bool {
	n := s.own[channel]
	switch {
	case n == 0:
		return false
	case n == 1:
		delete(s.own, channel)
	default:
		s.own[channel] = n - 1
	}
	return true
}

// moveWhenKnown moves channels off s, polling until the slot map names
// another master for each, or movePolls pass (the slot stayed).
func (ps *PubSub) moveWhenKnown(s *shard, channels []string) {
	for range movePolls {
		if channels = ps.move(s, channels); len(channels) == 0 {
			return
		}
		select {
		case <-time.After(movePoll):
		case <-s.done:
			return
		}
	}
}

// move subscribes each of channels on its slot's master, if not s, and
// drops it from s; it returns those that stay.
func (ps *PubSub) move(s *shard, channels []string) (stay []string) {
	cc, ok := ps.client.redis().(*redis.ClusterClient)
	if !ok {
		return nil
	}
	ctx := context.Background()
	cc.ReloadState(ctx) // in the background: a later poll sees it
	for _, ch := range channels {
		node, err := cc.MasterForKey(ctx, ch)
		if err != nil || node.Options().Addr == s.addr {
			stay = append(stay, ch)
			continue
		}
		ps.mu.Lock()
		sub, ok := ps.moveLocked(ctx, s, ch)
		ps.mu.Unlock()
		if !ok {
			stay = append(stay, ch)
		} else if sub != nil {
			sub.l.Missed(ch)
		}
	}
	return stay
}

// moveLocked moves ch's subscription off s; it returns the subscription
// moved (nil if there was none to move) and false if ch stays on s.
func (ps *PubSub) moveLocked(ctx context.Context, s *shard, ch string) (*Subscription, bool) {
	sub := ps.subs[ch]
	if sub == nil || (sub.shard != nil && sub.shard != s) {
		return nil, true
	}
	if sub.shard != nil && !s.closed {
		// The old node may be dead: its connection is not waited for.
		ps.forgetAllWithin(s, []string{ch}, 100*time.Millisecond)
		ps.dropChannelLocked(s, ch)
	}
	moved, err := ps.subscribeLocked(ctx, ch, sub.l)
	if err != nil {
		// Homeless until a later poll places it: Failed, so that its
		// owner may subscribe afresh meanwhile.
		sub.shard, sub.err = nil, err
		return nil, false
	}
	// The owner's handle takes the new subscription's place.
	sub.shard, sub.target, sub.ready, sub.err = moved.shard, moved.target, moved.ready, nil
	st := moved.shard.chans[ch]
	st.pending[len(st.pending)-1] = sub
	ps.subs[ch] = sub
	// Missed now, and again on the new node's confirmation.
	st.resync = true
	return sub, true
}

// channelsOf returns the channels subscribed on s.
func (ps *PubSub) channelsOf(s *shard) []string {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return slices.Collect(maps.Keys(s.chans))
}
