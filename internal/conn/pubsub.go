package conn

import (
	"context"
	"sync"
	"time"
)

// PubSubLinger is how long a pub/sub connection stays open after its last
// channel, so that bursts of contention do not reconnect.
const PubSubLinger = 100 * time.Millisecond

// PubSubFor returns the pub/sub transport of client.
func PubSubFor(client Client) *PubSub { return sharedOf(client).ps }

// PubSub is the pub/sub transport of one Redis client (see the package
// doc). A channel has one Subscription at a time, whose Listener hears it.
type PubSub struct {
	client  Ref
	cluster bool

	mu     sync.Mutex
	shards map[string]*shard        // node address ("" off-cluster) -> connection
	subs   map[string]*Subscription // channel -> its live subscription
}

func newPubSub(client Client) *PubSub {
	ps := &PubSub{client: NewRef(client), shards: map[string]*shard{}, subs: map[string]*Subscription{}}
	ps.cluster = client.Cluster()
	return ps
}

// Listener hears a channel. Its methods run in order on the receiving
// goroutine and must not block; they may still run shortly after Cancel.
type Listener interface {
	// Message is a message published on channel.
	Message(channel, payload string)
	// Missed says a message may have been missed (a reconnect, a move).
	Missed(channel string)
	// Broken says channel's connection failed; Missed follows recovery.
	Broken(channel string)
}

// Subscription is one channel's subscription; see Ready.
type Subscription struct {
	ps      *PubSub
	shard   *shard
	channel string
	l       Listener
	target  int
	ready   chan struct{}
	err     error // set before ready is closed when Redis refused the subscription
}

// Publish sends message on channel with PublishCommand, bounded by ctx
// where the client honours it, else by its read timeout.
func (ps *PubSub) Publish(ctx context.Context, channel string, message any) error {
	c := ps.client.Client()
	if c.rdb == nil {
		return ErrClosed // collected: no caller holds it
	}
	return c.Process(ctx, NewCmd(ctx, 1, ps.PublishCommand(), channel, message)).Err()
}

// PublishCommand is the command an unlock script publishes with, as
// Redisson does: SPUBLISH on a cluster (on the lock's shard), else PUBLISH.
func (ps *PubSub) PublishCommand() string {
	if ps.cluster {
		return "spublish"
	}
	return "publish"
}

// Subscribe subscribes channel for l, in place of any subscription it had.
// It does not wait for Redis to confirm it: see Subscription.Ready.
func (ps *PubSub) Subscribe(ctx context.Context, channel string, l Listener) (*Subscription, error) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return ps.subscribeLocked(ctx, channel, l)
}

// Ready is closed when Redis confirmed or refused the subscription, or it
// was cancelled or moved.
func (sub *Subscription) Ready() <-chan struct{} {
	sub.ps.mu.Lock()
	defer sub.ps.mu.Unlock()
	return sub.ready
}

// Err is why Redis refused the subscription, nil if it did not.
func (sub *Subscription) Err() error {
	sub.ps.mu.Lock()
	defer sub.ps.mu.Unlock()
	return sub.err
}

// Failed reports whether Redis refused the subscription.
func (sub *Subscription) Failed() bool {
	sub.ps.mu.Lock()
	defer sub.ps.mu.Unlock()
	return sub.failedLocked()
}

func (sub *Subscription) failedLocked() bool {
	select {
	case <-sub.ready:
		return sub.err != nil
	default:
		return false
	}
}

// Cancel unsubscribes the channel (see PubSubLinger).
func (sub *Subscription) Cancel() {
	ps := sub.ps
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.forgetSub(sub)
	s := sub.shard
	if s == nil || s.closed {
		return
	}
	ps.forgetLocked(s, sub.channel)
	ps.dropChannelLocked(s, sub.channel)
}

// CancelAll is Cancel for many subscriptions, with one UNSUBSCRIBE per
// connection (one SUNSUBSCRIBE per slot, against CROSSSLOT).
func (ps *PubSub) CancelAll(subs []*Subscription) {
	type group struct {
		s    *shard
		slot int
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	groups := map[group][]string{}
	for _, sub := range subs {
		ps.forgetSub(sub)
		if sub.shard == nil || sub.shard.closed {
			continue
		}
		g := group{s: sub.shard, slot: -1}
		if sub.shard.ssub {
			g.slot = Slot(sub.channel)
		}
		groups[g] = append(groups[g], sub.channel)
	}
	for g, channels := range groups {
		ps.forgetAllWithin(g.s, channels, time.Second)
		for _, ch := range channels {
			ps.dropChannelLocked(g.s, ch)
		}
	}
}

// Channels is how many channels are subscribed now.
func (ps *PubSub) Channels() (n int) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	for _, s := range ps.shards {
		n += len(s.chans)
	}
	return n
}

func (ps *PubSub) forgetSub(sub *Subscription) {
	if ps.subs[sub.channel] == sub {
		delete(ps.subs, sub.channel)
	}
}

// listener returns who listens to channel, nil for nobody.
func (ps *PubSub) listener(channel string) Listener {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if sub := ps.subs[channel]; sub != nil {
		return sub.l
	}
	return nil
}
