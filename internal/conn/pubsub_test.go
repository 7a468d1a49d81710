package conn_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/conn"
	"github.com/relock-go/relock/internal/testkit/redistest"
)

func TestPublishCommandFollowsTheClientKind(t *testing.T) {
	t.Parallel()
	mr, client := redistest.Miniredis(t)
	assert.Equal(t, "publish", conn.PubSubFor(conn.Of(client)).PublishCommand())

	// A UniversalClient given one address is a plain client.
	uc := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: []string{mr.Addr()}})
	t.Cleanup(func() { _ = uc.Close() })
	assert.Equal(t, "publish", conn.PubSubFor(conn.Of(uc)).PublishCommand())

	// No connection is needed to tell a cluster client.
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{mr.Addr()}})
	t.Cleanup(func() { _ = cc.Close() })
	assert.Equal(t, "spublish", conn.PubSubFor(conn.Of(cc)).PublishCommand())
}

func TestManyChannelsShareOneConnection(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	srv := redistest.StartServer(t)
	client := srv.Client(t)
	admin := srv.Client(t)
	ps := conn.PubSubFor(conn.Of(client))
	rec := newRecorder()

	const n = 100
	channels := make([]string, n)
	subs := make([]*conn.Subscription, n)
	for i := range channels {
		channels[i] = chanName(t, i)
	}
	// Subscribed concurrently: the transport must still open a single
	// connection.
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range channels {
		wg.Go(func() {
			subs[i], errs[i] = ps.Subscribe(ctx, channels[i], rec)
		})
	}
	wg.Wait()
	for i, sub := range subs {
		require.NoError(t, errs[i], channels[i])
		t.Cleanup(sub.Cancel)
	}
	for i, sub := range subs {
		requireReady(t, sub, channels[i])
	}

	// Every subscription is confirmed: no waiting here.
	assert.Equal(t, 1, pubSubConns(t, ctx, admin), "one pub/sub connection for every channel of the client")
	info := redistest.PubSubConn(t, ctx, admin)
	assert.Equal(t, n, info.Sub, "the connection is subscribed to every channel")
	assert.Equal(t, n, ps.Channels())
	counts := redistest.NumSub(t, ctx, admin, channels...)
	for _, ch := range channels {
		assert.Equal(t, int64(1), counts[ch], "PUBSUB NUMSUB %s", ch)
	}

	for _, sub := range subs {
		sub.Cancel()
	}
	assert.Zero(t, ps.Channels())
	redistest.RequireNumSubEventually(t, ctx, admin, 0, channels...)
	// The connection closes PubSubLinger after its last channel.
	redistest.RequirePubSubConnsEventually(t, ctx, admin, 0)
	redistest.RequireConnClosedEventually(t, ctx, admin, info.ID)
	rec.requireQuiet(t, "no message was published")
}

// Once Ready is closed, Redis has subscribed the channel: a PUBLISH made
// right then reaches it.
func TestReadySubscriptionHearsThePublishThatFollows(t *testing.T) {
	t.Parallel()
	redistest.ForBackends(t, func(t *testing.T, env *redistest.Env) {
		ctx := testContext(t)
		ps := conn.PubSubFor(conn.Of(env.Client))
		publisher := redis.NewClient(&redis.Options{Addr: env.Client.Options().Addr})
		t.Cleanup(func() { _ = publisher.Close() })

		// Repeated, each time on a fresh channel (and so a fresh SUBSCRIBE),
		// some on a connection that already exists and some not.
		for i := range 20 {
			ch := chanName(t, i)
			rec := newRecorder()
			sub := subscribeReady(t, ctx, ps, ch, rec)
			// PUBLISH answers how many subscribers got the message: a
			// subscription still in flight would make it 0.
			n, err := publisher.Publish(ctx, ch, "unlocked").Result()
			require.NoError(t, err)
			assert.Equal(t, int64(1), n, "round %d: the PUBLISH right after Ready reached the subscription", i)
			rec.requireMessage(t, ch, "unlocked", "round "+ch)
			sub.Cancel()
		}
	})
}

// A connection that drops is made again with every channel on it: each
// listener hears Broken when it fails and Missed once its channel is
// subscribed again, and then hears the channel's messages.
func TestSubscriptionsComeBackAfterAServerRestart(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	srv := redistest.StartServer(t)
	client := srv.Client(t)
	admin := srv.Client(t)
	ps := conn.PubSubFor(conn.Of(client))
	ch := chanName(t, 0)
	rec := newRecorder()

	sub := subscribeReady(t, ctx, ps, ch, rec)
	require.Equal(t, int64(1), redistest.NumSub(t, ctx, admin, ch)[ch])

	srv.Kill()
	// Unlock messages may have been lost while the connection was down.
	require.Equal(t, heard{"broken", ch, ""}, rec.next(t, "after the connection dropped"))

	srv.Restart(t)
	// go-redis subscribes the channel again on the new connection; its
	// confirmation tells the listener a message may have been missed.
	redistest.RequireNumSubEventually(t, ctx, admin, 1, ch)
	rec.waitFor(t, "missed", ch, "after the resubscription")
	rec.requireQuiet(t, "after the resubscription was confirmed")
	assert.False(t, sub.Failed(), "the subscription survives the restart")

	n, err := admin.Publish(ctx, ch, "unlocked").Result()
	require.NoError(t, err)
	assert.Equal(t, int64(1), n)
	rec.requireMessage(t, ch, "unlocked", "a message after the restart")

	// New channels are subscribed and confirmed on the new connection too.
	ch2 := chanName(t, 1)
	sub2 := subscribeReady(t, ctx, ps, ch2, rec)
	n, err = admin.Publish(ctx, ch2, "unlocked").Result()
	require.NoError(t, err)
	assert.Equal(t, int64(1), n, "a channel subscribed after the restart is subscribed when Ready closes")
	rec.requireMessage(t, ch2, "unlocked", "a channel subscribed after the restart")
	assert.Equal(t, 1, pubSubConns(t, ctx, admin), "still one pub/sub connection")

	sub.Cancel()
	sub2.Cancel()
	redistest.RequireNumSubEventually(t, ctx, admin, 0, ch, ch2)
	redistest.RequirePubSubConnsEventually(t, ctx, admin, 0)
}

// A Subscribe whose SUBSCRIBE cannot be sent (the server is down) fails;
// the channel it asked for must not stay in the connection's subscription
// set, or go-redis subscribes it again on the next reconnect, for no
// listener.
func TestSubscribeThatCannotBeSentLeavesNoChannelBehind(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	srv := redistest.StartServer(t)
	client := srv.Client(t)
	admin := srv.Client(t)
	ps := conn.PubSubFor(conn.Of(client))
	kept, failed := chanName(t, 0), chanName(t, 1)
	rec := newRecorder()

	sub := subscribeReady(t, ctx, ps, kept, rec)
	srv.Kill()
	// Heard once the transport's reader has seen the connection fail
	// (go-redis dropped the connection and could not dial a new one).
	rec.waitFor(t, "broken", kept, "after the server died")

	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	// go-redis has no connection and cannot dial one: the SUBSCRIBE
	// cannot be sent.
	refused, err := ps.Subscribe(sctx, failed, rec)
	if refused != nil {
		refused.Cancel()
	}
	require.Error(t, err, "Subscribe with the server down")
	assert.Equal(t, 1, ps.Channels(), "the failed channel is not counted")

	srv.Restart(t)
	redistest.RequireNumSubEventually(t, ctx, admin, 1, kept)
	assert.Equal(t, int64(0), redistest.NumSub(t, ctx, admin, failed)[failed],
		"the channel of the failed Subscribe was subscribed again on reconnect")
	sub.Cancel()
	redistest.RequirePubSubConnsEventually(t, ctx, admin, 0)
}

// A SUBSCRIBE Redis refuses (NOPERM: Redis 7's default acl-pubsub-default
// is resetchannels) fails its subscription, which must not wait for ever;
// the connection stays usable for the channels the user may subscribe.
func TestRefusedSubscribeFailsItsSubscription(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	srv := redistest.StartServer(t)
	admin := srv.Client(t)
	require.NoError(t, admin.Do(ctx, "ACL", "SETUSER", "app", "on", ">pw", "~*", "&allowed:*", "+@all").Err())
	app := srv.Client(t, func(o *redis.Options) { o.Username, o.Password = "app", "pw" })
	ps := conn.PubSubFor(conn.Of(app))
	rec := newRecorder()

	denied := subscribe(t, ctx, ps, chanName(t, 0), rec)
	select {
	case <-denied.Ready():
	case <-time.After(heardTimeout):
		t.Fatal("a refused subscription never became ready")
	}
	require.ErrorContains(t, denied.Err(), "NOPERM")
	assert.True(t, denied.Failed())

	allowed := "allowed:" + t.Name()
	subscribeReady(t, ctx, ps, allowed, rec)
	n, err := admin.Publish(ctx, allowed, "x").Result()
	require.NoError(t, err)
	assert.Equal(t, int64(1), n, "subscribed on the connection that saw the refusal")
	rec.requireMessage(t, allowed, "x", "the allowed channel")
}

// Cancel writes the UNSUBSCRIBE and returns: a server that stopped
// answering does not hold it up, and the channel is forgotten at once.
func TestCancelDoesNotWaitForAHungServer(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	srv := redistest.StartServer(t)
	ps := conn.PubSubFor(conn.Of(srv.Client(t)))
	sub := subscribeReady(t, ctx, ps, chanName(t, 0), newRecorder())

	srv.Pause(t)
	start := time.Now()
	sub.Cancel()
	assert.Less(t, time.Since(start), 2*time.Second, "Cancel waited on the hung server")
	assert.Zero(t, ps.Channels())
}
