package conn_test

import (
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/conn"
	"github.com/relock-go/relock/internal/testkit/redistest"
)

// On a cluster the transport holds one sharded pub/sub connection per
// master, subscribed to that master's channels only; SPUBLISH reaches a
// channel's listener, a plain PUBLISH does not.
func TestShardedSubscriptionsOneConnectionPerMaster(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	cc, servers := redistest.StartCluster(t, 3)
	require.NotNil(t, cc)
	ps := conn.PubSubFor(conn.Of(cc))
	require.Equal(t, "spublish", ps.PublishCommand())

	admins := map[string]*redis.Client{}
	for _, s := range servers {
		admins[s.Addr] = s.Client(t)
	}
	// Two channels (two locks, with hash tags) on each master.
	const perNode = 2
	byNode := map[string][]string{}
	var channels []string
	for i := 0; len(channels) < perNode*len(servers) && i < 10000; i++ {
		ch := fmt.Sprintf("redisson_lock__channel:{order:%d}", i)
		node, err := cc.MasterForKey(ctx, ch)
		require.NoError(t, err)
		addr := node.Options().Addr
		if len(byNode[addr]) < perNode {
			byNode[addr] = append(byNode[addr], ch)
			channels = append(channels, ch)
		}
	}
	require.Len(t, byNode, len(servers))
	require.Len(t, channels, perNode*len(servers))

	recs := map[string]*recorder{}
	subs := map[string]*conn.Subscription{}
	for _, ch := range channels {
		recs[ch] = newRecorder()
		subs[ch] = subscribeReady(t, ctx, ps, ch, recs[ch])
	}
	assert.Equal(t, len(channels), ps.Channels())

	// One sharded pub/sub connection per master, subscribed to that
	// master's channels only.
	connIDs := map[string]int64{}
	for addr, chs := range byNode {
		admin := admins[addr]
		require.NotNil(t, admin, addr)
		info := redistest.PubSubConn(t, ctx, admin)
		connIDs[addr] = info.ID
		assert.Equal(t, len(chs), info.SSub, "%s: shard channels", addr)
		assert.Zero(t, info.Sub, "%s: no plain SUBSCRIBE on a cluster", addr)
		n, err := admin.PubSubShardNumSub(ctx, chs...).Result()
		require.NoError(t, err)
		for _, ch := range chs {
			assert.Equal(t, int64(1), n[ch], "%s: PUBSUB SHARDNUMSUB %s", addr, ch)
		}
	}

	for _, ch := range channels {
		// A plain PUBLISH does not reach a sharded subscriber.
		require.Equal(t, int64(0), cc.Publish(ctx, ch, "plain").Val(), ch)
		n, err := cc.SPublish(ctx, ch, "unlocked").Result()
		require.NoError(t, err)
		assert.Equal(t, int64(1), n, "SPUBLISH %s reached the transport", ch)
		recs[ch].requireMessage(t, ch, "unlocked", ch)
	}
	// Each message reached its own channel's listener only.
	for _, ch := range channels {
		recs[ch].requireQuiet(t, ch)
	}

	// Half are cancelled one by one, the rest together (one SUNSUBSCRIBE
	// per slot): every connection closes after its last channel.
	var rest []*conn.Subscription
	for i, ch := range channels {
		if i%2 == 0 {
			subs[ch].Cancel()
		} else {
			rest = append(rest, subs[ch])
		}
	}
	ps.CancelAll(rest)
	assert.Zero(t, ps.Channels())
	for addr, admin := range admins {
		redistest.RequirePubSubConnsEventually(t, ctx, admin, 0)
		redistest.RequireConnClosedEventually(t, ctx, admin, connIDs[addr])
	}
}

// When a channel's slot moves to another master, the old one drops the
// shard channel (a sunsubscribe of its own): the subscription follows the
// slot to the new master, its listener hears Missed at once (a message
// may be lost in between), and the messages published there.
func TestSubscriptionFollowsItsSlotToANewMaster(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	cc, servers := redistest.StartCluster(t, 2)
	require.NotNil(t, cc)
	ps := conn.PubSubFor(conn.Of(cc))
	ch := chanName(t, 0)
	rec := newRecorder()
	sub := subscribeReady(t, ctx, ps, ch, rec)

	from, err := cc.MasterForKey(ctx, ch)
	require.NoError(t, err)
	to := servers[0]
	if to.Addr == from.Options().Addr {
		to = servers[1]
	}
	require.NoError(t, redistest.MoveSlot(ctx, servers, conn.Slot(ch), to))
	rec.waitFor(t, "missed", ch, "after the slot moved")

	newOwner := to.Client(t)
	require.Eventually(t, func() bool {
		res, err := newOwner.PubSubShardNumSub(ctx, ch).Result()
		return err == nil && res[ch] == 1
	}, settle, poll, "the subscription followed the slot to its new master")
	requireReady(t, sub, "the moved subscription")
	assert.Equal(t, 1, ps.Channels())

	n, err := newOwner.SPublish(ctx, ch, "unlocked").Result()
	require.NoError(t, err)
	require.Equal(t, int64(1), n)
	rec.waitFor(t, "message", ch, "a message published on the new master")

	// Cancel reaches the moved subscription: the new master's connection
	// closes after its last channel.
	sub.Cancel()
	assert.Zero(t, ps.Channels())
	require.Eventually(t, func() bool {
		res, err := newOwner.PubSubShardNumSub(ctx, ch).Result()
		return err == nil && res[ch] == 0
	}, settle, poll, "the moved subscription was cancelled")
	redistest.RequirePubSubConnsEventually(t, ctx, newOwner, 0)
}
