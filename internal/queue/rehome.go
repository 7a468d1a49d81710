package queue

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"
)

// On a cluster a channel lives on the master of its slot. When the slot
// moves (a resharding, a failover), the old node drops the channel with
// a sunsubscribe of its own, or stops answering; the unlock messages are
// then published on the new master, where nobody listens. The hub moves
// the channel's subscription there and lets the heads try at once, rather
// than leave its waiters to their TTL timers. It runs on the shard's
// receiving goroutine, or, when it must wait for the client's view of the
// cluster to change, on one that ends within 2 s or with the shard.

// movePolls bounds the wait, after a sunsubscribe, for the client's view
// of the cluster to name the slot's new master (it is reloaded in the
// background), one poll every movePoll.
const (
	movePolls = 40
	movePoll  = 50 * time.Millisecond
)

// dropped handles a sunsubscribe on s: the reply to one the hub sent, or
// the server dropping a channel whose slot it no longer serves; it
// reports the channel to move in the second case.
func (h *Hub) dropped(s *shard, channel string) (move bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if n := s.own[channel]; n > 0 {
		if n == 1 {
			delete(s.own, channel)
		} else {
			s.own[channel] = n - 1
		}
		return false
	}
	if s.chans[channel] == nil {
		return false
	}
	if q := h.queues[channel]; q != nil {
		q.heard() // the lock may have moved with the slot, freed meanwhile
	}
	return true
}

// moveWhenKnown moves channels off s, polling until the client's view of
// the cluster names another master for each, or movePolls pass (the slot
// stayed, or came back).
func (h *Hub) moveWhenKnown(s *shard, channels []string) {
	for range movePolls {
		if channels = h.move(s, channels); len(channels) == 0 {
			return
		}
		select {
		case <-time.After(movePoll):
		case <-s.done:
			return
		}
	}
}

// move subscribes each of channels on the master that serves its slot
// now, if that is not s, and drops it from s; it returns the channels
// that stay (their slot is still s's, as far as the client knows). A
// channel nobody waits on, or whose subscription moved already, is done.
func (h *Hub) move(s *shard, channels []string) (stay []string) {
	cc, ok := h.client.Client().(*redis.ClusterClient)
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
		h.mu.Lock()
		q := h.queues[ch]
		if q == nil || (q.sub != nil && q.sub.shard != s) {
			h.mu.Unlock()
			continue
		}
		if q.sub != nil && !s.closed {
			// The old node may be dead: its connection is not waited for.
			h.forgetWithin(s, ch, 100*time.Millisecond)
			h.dropChannelLocked(s, ch)
		}
		q.sub = nil
		sub, err := h.subscribeLocked(ctx, ch)
		if err != nil {
			h.mu.Unlock()
			stay = append(stay, ch)
			continue
		}
		q.sub = sub
		// The heads try now, and again when the new node confirms the
		// subscription: an unlock may be published before it does.
		sub.shard.chans[ch].resync = true
		q.heard()
		h.mu.Unlock()
	}
	return stay
}

// channelsOf returns the channels subscribed on s.
func (h *Hub) channelsOf(s *shard) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Collect(maps.Keys(s.chans))
}
