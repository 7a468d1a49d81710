package conn_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/conn"
	"github.com/relock-go/relock/internal/testkit/redistest"
)

// An SSUBSCRIBE sent on a stale view of the cluster reaches the slot's old
// master, which answers MOVED: the subscription moves to the slot's new
// master instead of failing for good, and its listener hears Missed and
// then the messages published there.
func TestSubscribeAnsweredMOVEDMovesToTheSlotsMaster(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	cc, servers := redistest.StartCluster(t, 2)
	require.NotNil(t, cc)
	ps := conn.PubSubFor(conn.Of(cc))

	// Two channels of two slots of one master: keep holds the connection
	// open, ch is subscribed once its slot has left.
	from, chans := channelsOfOneMaster(t, ctx, cc, 2)
	keep, ch := chans[0], chans[1]
	rec := newRecorder()
	subscribeReady(t, ctx, ps, keep, rec)

	to := servers[0]
	if to.Addr == from {
		to = servers[1]
	}
	// Moved behind the client's back: its view still names the old master.
	require.NoError(t, redistest.MoveSlot(ctx, servers, conn.Slot(ch), to))
	sub := subscribe(t, ctx, ps, ch, rec)

	newOwner := to.Client(t)
	require.Eventually(t, func() bool {
		res, err := newOwner.PubSubShardNumSub(ctx, ch).Result()
		return err == nil && res[ch] == 1
	}, settle, poll, "the subscription moved to the slot's new master")
	rec.waitFor(t, "missed", ch, "after the move")
	requireReady(t, sub, "the moved subscription")

	n, err := newOwner.SPublish(ctx, ch, "unlocked").Result()
	require.NoError(t, err)
	require.Equal(t, int64(1), n)
	rec.waitFor(t, "message", ch, "a message published on the new master")
}

// A subscription follows its slot through a failover: the dead master's
// connection fails (Broken), the slot's promoted replica serves it, the
// subscription is made there, and the listener hears Missed and then the
// messages published on the new master.
func TestSubscriptionFollowsItsSlotThroughAFailover(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	// Three masters: a failover needs the votes of a majority of them.
	cc, masters, replicas := redistest.StartClusterWithReplicas(t, 3)
	require.NotNil(t, cc)
	ps := conn.PubSubFor(conn.Of(cc))
	ch := chanName(t, 0)
	node, err := cc.MasterForKey(ctx, ch)
	require.NoError(t, err)
	owner := -1
	for i, m := range masters {
		if m.Addr == node.Options().Addr {
			owner = i
		}
	}
	require.GreaterOrEqual(t, owner, 0)
	rec := newRecorder()
	sub := subscribeReady(t, ctx, ps, ch, rec)

	masters[owner].Kill()
	rec.waitFor(t, "broken", ch, "after its master died")
	promoted := replicas[owner].Client(t)
	if !assert.Eventually(t, func() bool {
		role, err := promoted.Do(ctx, "ROLE").Slice()
		return err == nil && len(role) > 0 && role[0] == "master"
	}, 20*time.Second, 50*time.Millisecond, "the replica took over") {
		for _, s := range append(masters, replicas...) {
			t.Log(s.LogTail())
		}
		t.FailNow()
	}
	require.Eventually(t, func() bool {
		res, err := promoted.PubSubShardNumSub(ctx, ch).Result()
		return err == nil && res[ch] == 1
	}, 20*time.Second, 50*time.Millisecond, "the subscription was made on the promoted replica")
	rec.waitFor(t, "missed", ch, "after the failover")
	requireReady(t, sub, "the moved subscription")

	n, err := promoted.SPublish(ctx, ch, "unlocked").Result()
	require.NoError(t, err)
	require.Equal(t, int64(1), n, fmt.Sprintf("SPUBLISH on %s", replicas[owner].Addr))
	rec.waitFor(t, "message", ch, "a message published on the promoted replica")
}

// A MOVED reply names one slot: a subscription of another slot waiting
// on the same connection for its confirmation is confirmed as usual, not
// failed with the other channel's redirect.
func TestMOVEDFailsNoSubscriptionOfAnotherSlot(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	cc, servers := redistest.StartCluster(t, 2)
	require.NotNil(t, cc)
	ps := conn.PubSubFor(conn.Of(cc))

	// keep holds the connection open; ch's slot leaves the master; other
	// stays there, in a third slot.
	from, chans := channelsOfOneMaster(t, ctx, cc, 3)
	keep, ch, other := chans[0], chans[1], chans[2]
	rec := newRecorder()
	subscribeReady(t, ctx, ps, keep, rec)

	to, old := servers[0], servers[1]
	if to.Addr == from {
		to, old = servers[1], servers[0]
	}
	require.NoError(t, redistest.MoveSlot(ctx, servers, conn.Slot(ch), to))
	// Both are sent while the old master answers nothing, so that the
	// MOVED for ch comes while other waits for its confirmation.
	old.Pause(t)
	sub := subscribe(t, ctx, ps, ch, rec)
	subOther := subscribe(t, ctx, ps, other, rec)
	time.Sleep(100 * time.Millisecond)
	old.Resume()

	requireReady(t, subOther, "the subscription of the slot that stayed")
	newOwner := to.Client(t)
	require.Eventually(t, func() bool {
		res, err := newOwner.PubSubShardNumSub(ctx, ch).Result()
		return err == nil && res[ch] == 1
	}, settle, poll, "the subscription moved to the slot's new master")
	requireReady(t, sub, "the moved subscription")
	n, err := old.Client(t).SPublish(ctx, other, "unlocked").Result()
	require.NoError(t, err)
	require.Equal(t, int64(1), n)
	rec.waitFor(t, "message", other, "a message on the slot that stayed")
}

// channelsOfOneMaster returns n channels that cc's master of chanName(t,
// 0) serves, that one first, each in a slot of its own, and that master's
// address.
func channelsOfOneMaster(t *testing.T, ctx context.Context, cc *redis.ClusterClient, n int) (addr string, chans []string) {
	t.Helper()
	slots := map[int]bool{}
	for i := 0; len(chans) < n && i < 10000; i++ {
		c := chanName(t, i)
		node, err := cc.MasterForKey(ctx, c)
		require.NoError(t, err)
		if i == 0 {
			addr = node.Options().Addr
		}
		if node.Options().Addr == addr && !slots[conn.Slot(c)] {
			slots[conn.Slot(c)] = true
			chans = append(chans, c)
		}
	}
	require.Len(t, chans, n, "channels of one master in %d slots", n)
	return addr, chans
}
