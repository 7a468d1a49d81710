package queue_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/relock-go/relock/internal/queue"
	"github.com/relock-go/relock/internal/testkit/redistest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const (
	// wakeTimeout bounds every wait for a wake-up: generous, since the
	// machine may be slow and -race slows it further.
	wakeTimeout = 10 * time.Second
	// settle bounds the waits for server-side state (NUMSUB, CLIENT LIST)
	// and for the linger to pass.
	settle = 15 * time.Second
	poll   = 10 * time.Millisecond
)

func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// chanName is a channel named as the lock package names them.
func chanName(t *testing.T, i int) string {
	return fmt.Sprintf("redisson_lock__channel:{%s:%d}", t.Name(), i)
}

// join queues a waiter and makes sure it leaves at the end of the test, so
// the hub's connection closes and no goroutine outlives the test.
func join(t *testing.T, ctx context.Context, h *queue.Hub, channel string, shared bool) *queue.Waiter {
	t.Helper()
	w, err := h.Join(ctx, channel, shared)
	require.NoError(t, err)
	require.NotNil(t, w)
	t.Cleanup(func() { w.Leave(false, 0) })
	return w
}

func requireWoken(t *testing.T, w *queue.Waiter, what string) {
	t.Helper()
	select {
	case <-w.Wake():
	case <-time.After(wakeTimeout):
		t.Fatalf("%s: not woken within %v", what, wakeTimeout)
	}
}

// requireNotSignalled checks without blocking that w has no pending wake-up.
// It is used right after an event whose wake-ups are all sent before the
// call that caused them returns (Leave, Release), or after another waiter
// woken by the same delivery was seen woken (the hub signals every head
// of a delivery under one lock), so it is exact, not a timing guess.
func requireNotSignalled(t *testing.T, w *queue.Waiter, what string) {
	t.Helper()
	select {
	case <-w.Wake():
		t.Fatalf("%s: woken, want not", what)
	default:
	}
}

func requireTake(t *testing.T, w *queue.Waiter, kick bool, hint time.Duration, what string) {
	t.Helper()
	gotKick, gotHint := w.Take()
	require.Equal(t, kick, gotKick, "%s: Take kick", what)
	require.Equal(t, hint, gotHint, "%s: Take hint", what)
}

func numSub(t *testing.T, ctx context.Context, c *redis.Client, channels ...string) map[string]int64 {
	t.Helper()
	n, err := c.PubSubNumSub(ctx, channels...).Result()
	require.NoError(t, err)
	return n
}

func requireNumSubEventually(t *testing.T, ctx context.Context, c *redis.Client, want int64, channels ...string) {
	t.Helper()
	require.Eventually(t, func() bool {
		n, err := c.PubSubNumSub(ctx, channels...).Result()
		if err != nil {
			return false
		}
		for _, ch := range channels {
			if n[ch] != want {
				return false
			}
		}
		return true
	}, settle, poll, "PUBSUB NUMSUB of %d channel(s) never became %d", len(channels), want)
}

func pubSubConns(t *testing.T, ctx context.Context, c *redis.Client) int {
	t.Helper()
	n, err := redistest.CountPubSubConns(ctx, c)
	require.NoError(t, err)
	return n
}

func requirePubSubConnsEventually(t *testing.T, ctx context.Context, c *redis.Client, want int) {
	t.Helper()
	require.Eventually(t, func() bool {
		n, err := redistest.CountPubSubConns(ctx, c)
		return err == nil && n == want
	}, settle, poll, "pub/sub connections never became %d", want)
}

// pubSubConn returns the one connection of the server in pub/sub mode.
func pubSubConn(t *testing.T, ctx context.Context, c *redis.Client) redistest.ClientInfo {
	t.Helper()
	infos, err := redistest.ClientList(ctx, c)
	require.NoError(t, err)
	var found []redistest.ClientInfo
	for _, ci := range infos {
		if ci.IsPubSub() {
			found = append(found, ci)
		}
	}
	require.Len(t, found, 1, "pub/sub connections: %+v", found)
	return found[0]
}

func requireConnClosedEventually(t *testing.T, ctx context.Context, c *redis.Client, id int64) {
	t.Helper()
	require.Eventually(t, func() bool {
		infos, err := redistest.ClientList(ctx, c)
		if err != nil {
			return false
		}
		for _, ci := range infos {
			if ci.ID == id {
				return false
			}
		}
		return true
	}, settle, poll, "connection id=%d was never closed", id)
}

// forBackends runs fn on miniredis and on a real redis-server. real is
// the redis-server, nil on miniredis.
func forBackends(t *testing.T, fn func(t *testing.T, env *redistest.Env)) {
	t.Helper()
	for _, b := range redistest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			env := b.New(t)
			require.NotNil(t, env)
			fn(t, env)
		})
	}
}

func TestOneConnectionForManyChannels(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	srv := redistest.StartServer(t)
	client := srv.Client(t)
	admin := srv.Client(t)
	h := queue.For(client)

	const n = 100
	channels := make([]string, n)
	waiters := make([]*queue.Waiter, n)
	for i := range channels {
		channels[i] = chanName(t, i)
	}
	// Joined concurrently: the hub must still open a single connection.
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range channels {
		wg.Go(func() {
			waiters[i], errs[i] = h.Join(ctx, channels[i], false)
		})
	}
	wg.Wait()
	for i, w := range waiters {
		require.NoError(t, errs[i], channels[i])
		t.Cleanup(func() { w.Leave(false, 0) })
	}

	// Join returned, so every subscription is confirmed: no waiting here.
	assert.Equal(t, 1, pubSubConns(t, ctx, admin), "one pub/sub connection for every waiter of the client")
	ps := pubSubConn(t, ctx, admin)
	assert.Equal(t, n, ps.Sub, "the connection is subscribed to every channel")
	subs := numSub(t, ctx, admin, channels...)
	for _, ch := range channels {
		assert.Equal(t, int64(1), subs[ch], "PUBSUB NUMSUB %s", ch)
		assert.True(t, h.Waiting(ch), ch)
	}

	for _, w := range waiters {
		w.Leave(false, 0)
	}
	for _, ch := range channels {
		assert.False(t, h.Waiting(ch), ch)
	}
	requireNumSubEventually(t, ctx, admin, 0, channels...)
	requirePubSubConnsEventually(t, ctx, admin, 0)
	requireConnClosedEventually(t, ctx, admin, ps.ID)
}

func TestChannelsAreReferenceCounted(t *testing.T) {
	t.Parallel()
	forBackends(t, func(t *testing.T, env *redistest.Env) {
		ctx := testContext(t)
		h := queue.For(env.Client)
		ch := chanName(t, 0)

		w1 := join(t, ctx, h, ch, false)
		w2 := join(t, ctx, h, ch, false)
		assert.Equal(t, int64(1), numSub(t, ctx, env.Client, ch)[ch], "two waiters, one subscription")
		var connID int64
		if env.Server != nil {
			ps := pubSubConn(t, ctx, env.Client)
			assert.Equal(t, 1, ps.Sub)
			connID = ps.ID
		}

		w1.Leave(false, 0)
		assert.True(t, h.Waiting(ch))
		requireWoken(t, w2, "the waiter that became head")
		requireTake(t, w2, true, 0, "the waiter that became head")
		// Had the departure unsubscribed the channel, the UNSUBSCRIBE would
		// have been written by the time Leave returned, and this PUBLISH
		// would reach no one.
		assert.Equal(t, int64(1), env.Client.Publish(ctx, ch, "x").Val(), "still subscribed while a waiter is left")
		requireWoken(t, w2, "the remaining waiter, message")

		w2.Leave(false, 0)
		assert.False(t, h.Waiting(ch))
		requireNumSubEventually(t, ctx, env.Client, 0, ch)
		if env.Server != nil {
			requirePubSubConnsEventually(t, ctx, env.Client, 0)
			requireConnClosedEventually(t, ctx, env.Client, connID)
		}

		// The channel can be joined again: it is subscribed afresh.
		w3 := join(t, ctx, h, ch, false)
		assert.Equal(t, int64(1), env.Client.Publish(ctx, ch, "x").Val())
		requireWoken(t, w3, "a waiter of the channel joined again")
	})
}

func TestJoinReturnsOnceSubscribed(t *testing.T) {
	t.Parallel()
	forBackends(t, func(t *testing.T, env *redistest.Env) {
		ctx := testContext(t)
		h := queue.For(env.Client)
		publisher := redis.NewClient(&redis.Options{Addr: env.Client.Options().Addr})
		t.Cleanup(func() { _ = publisher.Close() })

		// Repeated, each time on a fresh channel (and so a fresh SUBSCRIBE),
		// some on a connection that already exists and some not.
		for i := range 20 {
			ch := chanName(t, i)
			w, err := h.Join(ctx, ch, false)
			require.NoError(t, err)
			// PUBLISH answers how many subscribers got the message: a
			// subscription still in flight would make it 0.
			n, err := publisher.Publish(ctx, ch, "unlocked").Result()
			require.NoError(t, err)
			assert.Equal(t, int64(1), n, "round %d: the PUBLISH right after Join reached the subscription", i)
			requireWoken(t, w, fmt.Sprintf("round %d head", i))
			requireTake(t, w, true, 0, "a message kicks the head")
			w.Leave(false, 0)
		}
	})
}

func TestMessageWakesOnlyTheHead(t *testing.T) {
	t.Parallel()
	forBackends(t, func(t *testing.T, env *redistest.Env) {
		ctx := testContext(t)
		h := queue.For(env.Client)
		ch := chanName(t, 0)

		w1 := join(t, ctx, h, ch, false)
		w2 := join(t, ctx, h, ch, false)
		w3 := join(t, ctx, h, ch, false)
		assert.True(t, w1.Head())
		assert.False(t, w2.Head())
		assert.False(t, w3.Head())

		require.Equal(t, int64(1), env.Client.Publish(ctx, ch, "unlocked").Val())
		requireWoken(t, w1, "head")
		requireNotSignalled(t, w2, "second waiter after a message")
		requireNotSignalled(t, w3, "third waiter after a message")
		requireTake(t, w1, true, 0, "head")
		requireTake(t, w2, false, 0, "second waiter")

		// A second message still goes to the head alone.
		require.Equal(t, int64(1), env.Client.Publish(ctx, ch, "unlocked").Val())
		requireWoken(t, w1, "head, second message")
		requireNotSignalled(t, w2, "second waiter after the second message")

		// The head gives up: the next one is woken to try (FIFO).
		w1.Leave(false, 0)
		requireWoken(t, w2, "second waiter after the head left")
		requireNotSignalled(t, w3, "third waiter after the head left")
		requireTake(t, w2, true, 0, "the new head is kicked")
		assert.True(t, w2.Head())
		assert.False(t, w3.Head())

		// Leave is idempotent: leaving again wakes no one.
		w1.Leave(false, 0)
		requireNotSignalled(t, w2, "second waiter after a repeated Leave")
		requireNotSignalled(t, w3, "third waiter after a repeated Leave")
	})
}

func TestLeaveOfAWaiterBehindTheHeadWakesNoOne(t *testing.T) {
	t.Parallel()
	_, client := redistest.Miniredis(t)
	ctx := testContext(t)
	h := queue.For(client)
	ch := chanName(t, 0)

	w1 := join(t, ctx, h, ch, false)
	w2 := join(t, ctx, h, ch, false)
	w3 := join(t, ctx, h, ch, false)
	w2.Leave(false, 0)
	requireNotSignalled(t, w1, "head")
	requireNotSignalled(t, w3, "third waiter")
	assert.True(t, w1.Head())
	assert.False(t, w3.Head())

	w1.Leave(false, 0)
	requireWoken(t, w3, "third waiter, next after the head")
	assert.True(t, w3.Head())
}

func TestLeaveAcquiredPromotesWithHint(t *testing.T) {
	t.Parallel()
	_, client := redistest.Miniredis(t)
	ctx := testContext(t)
	h := queue.For(client)
	ch := chanName(t, 0)

	w1 := join(t, ctx, h, ch, false)
	w2 := join(t, ctx, h, ch, false)
	w3 := join(t, ctx, h, ch, false)

	const hold = 7 * time.Second
	w1.Leave(true, hold)
	requireWoken(t, w2, "the waiter promoted to head")
	requireTake(t, w2, false, hold, "promoted behind a local holder: a hint, no kick")
	requireTake(t, w2, false, 0, "Take clears")
	requireNotSignalled(t, w3, "third waiter")
	assert.True(t, w2.Head())
	assert.True(t, h.Waiting(ch))

	// The local holder releases: the new head is kicked.
	h.Release(ch)
	requireWoken(t, w2, "head after Release")
	requireTake(t, w2, true, 0, "Release kicks")
	requireNotSignalled(t, w3, "third waiter after Release")
}

func TestSharedWaitersAtTheFrontWakeTogether(t *testing.T) {
	t.Parallel()
	forBackends(t, func(t *testing.T, env *redistest.Env) {
		ctx := testContext(t)
		h := queue.For(env.Client)
		ch := chanName(t, 0)

		r1 := join(t, ctx, h, ch, true)
		r2 := join(t, ctx, h, ch, true)
		r3 := join(t, ctx, h, ch, true)
		x4 := join(t, ctx, h, ch, false)
		r5 := join(t, ctx, h, ch, true)
		for i, w := range []*queue.Waiter{r1, r2, r3} {
			assert.True(t, w.Head(), "reader %d in the run at the front", i+1)
		}
		assert.False(t, x4.Head())
		assert.False(t, r5.Head(), "a reader behind a writer is not at the front")

		require.Equal(t, int64(1), env.Client.Publish(ctx, ch, "unlocked").Val())
		requireWoken(t, r1, "reader 1")
		requireWoken(t, r2, "reader 2")
		requireWoken(t, r3, "reader 3")
		requireNotSignalled(t, x4, "writer behind the readers")
		requireNotSignalled(t, r5, "reader behind the writer")
		for i, w := range []*queue.Waiter{r1, r2, r3} {
			requireTake(t, w, true, 0, fmt.Sprintf("reader %d", i+1))
		}

		// The readers go; once the last of them has left, the writer is
		// the head, alone: the reader behind it does not go with it.
		r1.Leave(false, 0)
		r2.Leave(false, 0)
		requireNotSignalled(t, x4, "writer while a reader is still at the front")
		r3.Leave(false, 0)
		requireWoken(t, x4, "writer, now the head")
		requireNotSignalled(t, r5, "reader behind the writer")
		assert.True(t, x4.Head())
		assert.False(t, r5.Head())

		require.Equal(t, int64(1), env.Client.Publish(ctx, ch, "unlocked").Val())
		requireWoken(t, x4, "writer, message")
		requireNotSignalled(t, r5, "reader behind the writer, message")
	})
}

func TestExclusiveHeadIsWokenAlone(t *testing.T) {
	t.Parallel()
	_, client := redistest.Miniredis(t)
	ctx := testContext(t)
	h := queue.For(client)
	ch := chanName(t, 0)

	x1 := join(t, ctx, h, ch, false)
	r2 := join(t, ctx, h, ch, true)
	r3 := join(t, ctx, h, ch, true)
	h.Release(ch)
	requireWoken(t, x1, "writer at the head")
	requireNotSignalled(t, r2, "reader behind the writer")
	requireNotSignalled(t, r3, "reader behind the writer")

	const hold = 3 * time.Second
	x1.Leave(true, hold)
	// Both readers are now at the front: both are promoted.
	requireWoken(t, r2, "reader 2 promoted")
	requireWoken(t, r3, "reader 3 promoted")
	requireTake(t, r2, false, hold, "reader 2")
	requireTake(t, r3, false, hold, "reader 3")
}

func TestReleaseWakesTheHead(t *testing.T) {
	t.Parallel()
	forBackends(t, func(t *testing.T, env *redistest.Env) {
		ctx := testContext(t)
		h := queue.For(env.Client)
		ch := chanName(t, 0)

		h.Release(ch) // nobody waits: nothing to do, nothing breaks
		assert.False(t, h.Waiting(ch))

		w1 := join(t, ctx, h, ch, false)
		w2 := join(t, ctx, h, ch, false)
		h.Release(ch)
		requireWoken(t, w1, "head")
		requireNotSignalled(t, w2, "second waiter")
		requireTake(t, w1, true, 0, "head")

		// A release of another channel wakes no one here.
		h.Release(chanName(t, 1))
		requireNotSignalled(t, w1, "head, other channel released")
	})
}

func TestWaiting(t *testing.T) {
	t.Parallel()
	_, client := redistest.Miniredis(t)
	ctx := testContext(t)
	h := queue.For(client)
	ch, other := chanName(t, 0), chanName(t, 1)

	assert.False(t, h.Waiting(ch))
	w1 := join(t, ctx, h, ch, false)
	assert.True(t, h.Waiting(ch))
	assert.False(t, h.Waiting(other))
	w2 := join(t, ctx, h, ch, true)
	w1.Leave(true, time.Second)
	assert.True(t, h.Waiting(ch), "one waiter is left")
	w2.Leave(false, 0)
	assert.False(t, h.Waiting(ch))
}

func TestForReturnsOneHubPerClient(t *testing.T) {
	t.Parallel()
	_, c1 := redistest.Miniredis(t)
	_, c2 := redistest.Miniredis(t)

	h1 := queue.For(c1)
	require.NotNil(t, h1)
	assert.Same(t, h1, queue.For(c1))
	assert.NotSame(t, h1, queue.For(c2))

	// Concurrent first uses agree on one hub.
	c3 := redis.NewClient(&redis.Options{Addr: c1.Options().Addr})
	t.Cleanup(func() { _ = c3.Close() })
	hubs := make([]*queue.Hub, 8)
	var wg sync.WaitGroup
	for i := range hubs {
		wg.Go(func() { hubs[i] = queue.For(c3) })
	}
	wg.Wait()
	for _, h := range hubs {
		assert.Same(t, hubs[0], h)
	}
}

func TestPublishCommand(t *testing.T) {
	t.Parallel()
	mr, client := redistest.Miniredis(t)
	assert.Equal(t, "publish", queue.For(client).PublishCommand())

	// A UniversalClient given one address is a plain client.
	uc := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: []string{mr.Addr()}})
	t.Cleanup(func() { _ = uc.Close() })
	assert.Equal(t, "publish", queue.For(uc).PublishCommand())

	// No connection is needed to tell a cluster client.
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{mr.Addr()}})
	t.Cleanup(func() { _ = cc.Close() })
	assert.Equal(t, "spublish", queue.For(cc).PublishCommand())
}

func TestClusterShardedPubSub(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	cc, servers := redistest.StartCluster(t, 3)
	require.NotNil(t, cc)
	h := queue.For(cc)
	require.Equal(t, "spublish", h.PublishCommand())

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

	waiters := map[string]*queue.Waiter{}
	for _, ch := range channels {
		waiters[ch] = join(t, ctx, h, ch, false)
	}

	// One sharded pub/sub connection per master, subscribed to that
	// master's channels only.
	connIDs := map[string]int64{}
	for addr, chs := range byNode {
		admin := admins[addr]
		require.NotNil(t, admin, addr)
		ps := pubSubConn(t, ctx, admin)
		connIDs[addr] = ps.ID
		assert.Equal(t, len(chs), ps.SSub, "%s: shard channels", addr)
		assert.Zero(t, ps.Sub, "%s: no plain SUBSCRIBE on a cluster", addr)
		n, err := admin.PubSubShardNumSub(ctx, chs...).Result()
		require.NoError(t, err)
		for _, ch := range chs {
			assert.Equal(t, int64(1), n[ch], "%s: PUBSUB SHARDNUMSUB %s", addr, ch)
		}
	}

	for _, ch := range channels {
		w := waiters[ch]
		// A plain PUBLISH does not reach a sharded subscriber.
		require.Equal(t, int64(0), cc.Publish(ctx, ch, "unlocked").Val(), ch)
		n, err := cc.SPublish(ctx, ch, "unlocked").Result()
		require.NoError(t, err)
		assert.Equal(t, int64(1), n, "SPUBLISH %s reached the hub", ch)
		requireWoken(t, w, ch)
		requireTake(t, w, true, 0, ch)
	}
	// Each message woke its own channel's waiter only.
	for _, ch := range channels {
		requireNotSignalled(t, waiters[ch], ch)
	}

	for _, w := range waiters {
		w.Leave(false, 0)
	}
	for addr, admin := range admins {
		requirePubSubConnsEventually(t, ctx, admin, 0)
		requireConnClosedEventually(t, ctx, admin, connIDs[addr])
	}
}

func TestReconnectAfterServerRestart(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	srv := redistest.StartServer(t)
	client := srv.Client(t)
	admin := srv.Client(t)
	h := queue.For(client)
	ch := chanName(t, 0)

	w1 := join(t, ctx, h, ch, false)
	w2 := join(t, ctx, h, ch, false)
	require.Equal(t, int64(1), numSub(t, ctx, admin, ch)[ch])

	srv.Kill()
	// Unlock messages may have been lost while the connection was down:
	// the head is woken to try again.
	requireWoken(t, w1, "head after the connection dropped")
	kick, _ := w1.Take()
	assert.True(t, kick, "the head is kicked on a reconnect")
	requireNotSignalled(t, w2, "second waiter after the connection dropped")

	srv.Restart(t)
	// go-redis subscribes the channel again on the new connection.
	requireNumSubEventually(t, ctx, admin, 1, ch)
	// Drain the wake-ups of the failed reconnects, all sent before the
	// connection that subscribed again was made.
	select {
	case <-w1.Wake():
	default:
	}
	w1.Take()
	requireNotSignalled(t, w2, "second waiter after the restart")

	n, err := admin.Publish(ctx, ch, "unlocked").Result()
	require.NoError(t, err)
	assert.Equal(t, int64(1), n)
	requireWoken(t, w1, "head, message after the restart")
	requireTake(t, w1, true, 0, "head, message after the restart")
	requireNotSignalled(t, w2, "second waiter, message after the restart")

	// New channels are subscribed and confirmed on the new connection too.
	ch2 := chanName(t, 1)
	w3 := join(t, ctx, h, ch2, false)
	n, err = admin.Publish(ctx, ch2, "unlocked").Result()
	require.NoError(t, err)
	assert.Equal(t, int64(1), n, "a channel joined after the restart is subscribed when Join returns")
	requireWoken(t, w3, "waiter of a channel joined after the restart")
	assert.Equal(t, 1, pubSubConns(t, ctx, admin), "still one pub/sub connection")

	w1.Leave(false, 0)
	w2.Leave(false, 0)
	w3.Leave(false, 0)
	requireNumSubEventually(t, ctx, admin, 0, ch, ch2)
	requirePubSubConnsEventually(t, ctx, admin, 0)
}

// stallServer speaks just enough RESP for go-redis to open a pub/sub
// connection to it, and holds back the confirmation of each SUBSCRIBE
// until the test sends it, so a test can see what Join does while a
// subscription is in flight.
type stallServer struct {
	addr   string
	l      net.Listener
	subs   chan stalledSub // SUBSCRIBEs received, one per channel
	unsubs chan stalledSub // UNSUBSCRIBEs received, one per channel

	mu    sync.Mutex
	conns []net.Conn
	wg    sync.WaitGroup
}

type stalledSub struct {
	conn    net.Conn
	channel string
}

func startStallServer(t *testing.T) *stallServer {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := &stallServer{addr: l.Addr().String(), l: l, subs: make(chan stalledSub, 100), unsubs: make(chan stalledSub, 100)}
	s.wg.Go(s.accept)
	t.Cleanup(s.close)
	return s
}

func (s *stallServer) accept() {
	for {
		c, err := s.l.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		s.conns = append(s.conns, c)
		s.mu.Unlock()
		s.wg.Go(func() { s.serve(c) })
	}
}

func (s *stallServer) serve(c net.Conn) {
	r := bufio.NewReader(c)
	for {
		args, err := readCommand(r)
		if err != nil {
			return
		}
		switch strings.ToLower(args[0]) {
		case "subscribe":
			for _, ch := range args[1:] {
				s.subs <- stalledSub{conn: c, channel: ch}
			}
		case "unsubscribe":
			for _, ch := range args[1:] {
				s.unsubs <- stalledSub{conn: c, channel: ch}
			}
		default: // HELLO and the like: go-redis falls back to RESP2
			_, _ = io.WriteString(c, "-ERR unknown command\r\n")
		}
	}
}

// confirm sends the reply to a stalled SUBSCRIBE.
func (s *stallServer) confirm(t *testing.T, sub stalledSub) {
	t.Helper()
	_, err := fmt.Fprintf(sub.conn, "*3\r\n$9\r\nsubscribe\r\n$%d\r\n%s\r\n:1\r\n", len(sub.channel), sub.channel)
	require.NoError(t, err)
}

// confirmUnsubscribe sends the reply to a stalled UNSUBSCRIBE.
func (s *stallServer) confirmUnsubscribe(t *testing.T, sub stalledSub) {
	t.Helper()
	_, err := fmt.Fprintf(sub.conn, "*3\r\n$11\r\nunsubscribe\r\n$%d\r\n%s\r\n:0\r\n", len(sub.channel), sub.channel)
	require.NoError(t, err)
}

func receiveUnsub(t *testing.T, s *stallServer) stalledSub {
	t.Helper()
	select {
	case sub := <-s.unsubs:
		return sub
	case <-time.After(wakeTimeout):
		t.Fatal("no UNSUBSCRIBE reached the server")
		return stalledSub{}
	}
}

func (s *stallServer) close() {
	_ = s.l.Close()
	s.mu.Lock()
	for _, c := range s.conns {
		_ = c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// readCommand reads one RESP array of bulk strings, as clients send.
func readCommand(r *bufio.Reader) ([]string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	if !strings.HasPrefix(line, "*") {
		return nil, fmt.Errorf("not an array: %q", line)
	}
	n, err := strconv.Atoi(strings.TrimSpace(line[1:]))
	if err != nil {
		return nil, err
	}
	args := make([]string, n)
	for i := range args {
		line, err := r.ReadString('\n')
		if err != nil {
			return nil, err
		}
		size, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "$")))
		if err != nil {
			return nil, err
		}
		buf := make([]byte, size+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, err
		}
		args[i] = string(buf[:size])
	}
	return args, nil
}

func stallClient(t *testing.T, s *stallServer) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: s.addr, Protocol: 2, DisableIdentity: true, MaxRetries: -1})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func receiveSub(t *testing.T, s *stallServer) stalledSub {
	t.Helper()
	select {
	case sub := <-s.subs:
		return sub
	case <-time.After(wakeTimeout):
		t.Fatal("no SUBSCRIBE reached the server")
		return stalledSub{}
	}
}

type joined struct {
	w   *queue.Waiter
	err error
}

func TestJoinWaitsForTheSubscriptionConfirmation(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	srv := startStallServer(t)
	h := queue.For(stallClient(t, srv))
	ch := chanName(t, 0)

	done := make(chan joined, 1)
	go func() {
		w, err := h.Join(ctx, ch, false)
		done <- joined{w, err}
	}()
	sub := receiveSub(t, srv)
	require.Equal(t, ch, sub.channel)
	select {
	case <-done:
		t.Fatal("Join returned before Redis confirmed the subscription")
	default:
	}
	assert.True(t, h.Waiting(ch), "the waiter is queued while its subscription is in flight")

	srv.confirm(t, sub)
	var j joined
	select {
	case j = <-done:
	case <-time.After(wakeTimeout):
		t.Fatal("Join did not return after the confirmation")
	}
	require.NoError(t, j.err)
	assert.True(t, j.w.Head())
	j.w.Leave(false, 0)
	assert.False(t, h.Waiting(ch))
}

func TestJoinEndsWithItsContext(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	srv := startStallServer(t)
	h := queue.For(stallClient(t, srv))
	ch := chanName(t, 0)

	jctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	done := make(chan joined, 1)
	go func() {
		w, err := h.Join(jctx, ch, false)
		done <- joined{w, err}
	}()
	sub := receiveSub(t, srv)
	require.Equal(t, ch, sub.channel)

	cause := errors.New("caller gave up")
	cancel(cause)
	var j joined
	select {
	case j = <-done:
	case <-time.After(wakeTimeout):
		t.Fatal("Join did not return when its context ended")
	}
	require.ErrorIs(t, j.err, cause, "Join returns the context's cause")
	assert.Nil(t, j.w)
	assert.False(t, h.Waiting(ch), "the waiter that gave up is no longer queued")
	assert.Equal(t, ch, receiveUnsub(t, srv).channel, "its channel is unsubscribed")
}

// A subscription that was abandoned while in flight (its only waiter gave
// up, so the channel was unsubscribed) still gets its SUBSCRIBE reply from
// Redis, ahead of the replies to the UNSUBSCRIBE and to a new SUBSCRIBE of
// the same channel. That stale reply must not count as the confirmation of
// the new one: Join would return before Redis has subscribed the channel
// again, and an unlock published in between would be missed (the waiter
// would then sleep until its TTL fallback).
func TestJoinIgnoresTheConfirmationOfAnAbandonedSubscription(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	srv := startStallServer(t)
	h := queue.For(stallClient(t, srv))
	ch, other := chanName(t, 0), chanName(t, 1)

	start := func(ctx context.Context, ch string) <-chan joined {
		done := make(chan joined, 1)
		go func() {
			w, err := h.Join(ctx, ch, false)
			done <- joined{w, err}
		}()
		return done
	}
	await := func(done <-chan joined, what string) joined {
		t.Helper()
		select {
		case j := <-done:
			return j
		case <-time.After(wakeTimeout):
			t.Fatalf("%s: Join did not return", what)
			return joined{}
		}
	}

	// A waiter of another lock keeps the connection busy; its confirmation
	// serves as a marker of how far the hub has read.
	otherDone := start(ctx, other)
	subOther := receiveSub(t, srv)
	require.Equal(t, other, subOther.channel)

	// Waiter 1 joins and gives up before its SUBSCRIBE is answered.
	jctx, cancel := context.WithCancel(ctx)
	firstDone := start(jctx, ch)
	sub1 := receiveSub(t, srv)
	require.Equal(t, ch, sub1.channel)
	cancel()
	require.ErrorIs(t, await(firstDone, "abandoned waiter").err, context.Canceled)
	unsub1 := receiveUnsub(t, srv)
	require.Equal(t, ch, unsub1.channel)

	// Waiter 2 joins the same channel: a new SUBSCRIBE goes out.
	secondDone := start(ctx, ch)
	sub2 := receiveSub(t, srv)
	require.Equal(t, ch, sub2.channel)

	// Redis answers in order: the abandoned SUBSCRIBE, the UNSUBSCRIBE,
	// and (here) the other channel's SUBSCRIBE; the new SUBSCRIBE of ch is
	// not answered yet.
	srv.confirm(t, sub1)
	srv.confirmUnsubscribe(t, unsub1)
	srv.confirm(t, subOther)
	marker := await(otherDone, "marker waiter")
	require.NoError(t, marker.err)
	t.Cleanup(func() { marker.w.Leave(false, 0) })
	// The hub has read the stale reply. A Join it released would be on its
	// way; the grace can only hide the bug, never fail a correct hub.
	select {
	case j := <-secondDone:
		if j.w != nil {
			j.w.Leave(false, 0)
		}
		t.Fatal("Join returned on the confirmation of the abandoned subscription, before its own SUBSCRIBE was answered")
	case <-time.After(300 * time.Millisecond):
	}

	srv.confirm(t, sub2)
	j := await(secondDone, "second waiter")
	require.NoError(t, j.err)
	j.w.Leave(false, 0)
}

// A Join whose SUBSCRIBE cannot be sent (the server is down) fails; the
// channel it asked for must not stay in the connection's subscription set,
// or go-redis subscribes it again on the next reconnect, for no waiter.
func TestFailedJoinLeavesNoSubscriptionBehind(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	srv := redistest.StartServer(t)
	client := srv.Client(t)
	admin := srv.Client(t)
	h := queue.For(client)
	kept, failed := chanName(t, 0), chanName(t, 1)

	w := join(t, ctx, h, kept, false)
	srv.Kill()
	// Woken once the hub's reader has seen the connection fail (go-redis
	// dropped the connection and could not dial a new one).
	requireWoken(t, w, "waiter after the server died")

	jctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	// The hub's reader has seen the connection fail, so go-redis has no
	// connection and cannot dial one: the SUBSCRIBE cannot be sent.
	w2, err := h.Join(jctx, failed, false)
	if w2 != nil {
		w2.Leave(false, 0)
	}
	require.Error(t, err, "Join with the server down")
	assert.False(t, h.Waiting(failed))

	srv.Restart(t)
	requireNumSubEventually(t, ctx, admin, 1, kept)
	assert.Equal(t, int64(0), numSub(t, ctx, admin, failed)[failed],
		"the channel of the failed Join was subscribed again on reconnect")
	w.Leave(false, 0)
	requirePubSubConnsEventually(t, ctx, admin, 0)
}

// claimant is a hand-off's receiving side that records nothing: the hub
// only carries it.
type claimant string

func (claimant) Granted(queue.Grant) {}
func (claimant) Discard(queue.Grant) {}

// TestLeaveStopsReservations: once Leave returns, no release can reserve the
// waiter; a reservation made before Leave is waited for, and the lock it
// granted is returned so that the waiter gives it back.
func TestLeaveStopsReservations(t *testing.T) {
	_, client := redistest.Miniredis(t)
	h := queue.For(client)
	ctx := testContext(t)
	ch := chanName(t, 0)

	w := join(t, ctx, h, ch, false)
	w.Claim("me", claimant("me"))
	given, handed := w.Leave(false, 0)
	require.False(t, handed, given)
	r, _ := h.Reserve(ch, queue.Pick{Head: true}, nil)
	require.Empty(t, r, "a waiter that left is not reserved")

	w = join(t, ctx, h, ch, false)
	w.Claim("me", claimant("me"))
	r, _ = h.Reserve(ch, queue.Pick{Head: true}, nil)
	require.Equal(t, []*queue.Waiter{w}, r)
	require.Equal(t, claimant("me"), w.Claimant())
	quit := make(chan queue.Grant, 1)
	go func() {
		g, ok := w.Leave(false, 0)
		require.True(t, ok)
		quit <- g
	}()
	select {
	case <-quit:
		t.Fatal("Leave returned while a hand-off to the waiter was under way")
	case <-time.After(30 * time.Millisecond):
	}
	w.End(queue.Handed, queue.Grant{Token: 42})
	select {
	case g := <-quit:
		require.Equal(t, int64(42), g.Token)
	case <-time.After(5 * time.Second):
		t.Fatal("Leave did not return after the grant")
	}
}

// TestRefusedKicksTheWaiter: a refused hand-off wakes the waiter to try.
func TestRefusedKicksTheWaiter(t *testing.T) {
	_, client := redistest.Miniredis(t)
	h := queue.For(client)
	ctx := testContext(t)
	ch := chanName(t, 0)
	w := join(t, ctx, h, ch, false)
	defer w.Leave(false, 0)
	w.Claim("me", claimant("me"))
	r, _ := h.Reserve(ch, queue.Pick{Head: true}, nil)
	require.Equal(t, []*queue.Waiter{w}, r)
	require.False(t, w.BeginTry(), "no try while reserved")
	w.End(queue.Refused, queue.Grant{})
	requireWoken(t, w, "after a refusal")
	kick, _ := w.Take()
	require.True(t, kick)
	require.True(t, w.BeginTry())
	w.EndTry()
}

// TestPassedKicksAWaiterRefusedATry: a release that reserved a waiter
// (Pick.Seats) and then found it was not first in line owes it the try
// BeginTry refused meanwhile: the waiter may not be in line at all yet (it
// subscribed before its first try), and nothing else would wake it.
func TestPassedKicksAWaiterRefusedATry(t *testing.T) {
	_, client := redistest.Miniredis(t)
	h := queue.For(client)
	ctx := testContext(t)
	prefix := chanName(t, 0)
	a, b := h.TakeSeat(prefix), h.TakeSeat(prefix)
	defer h.ReturnSeat(prefix, a, true)
	defer h.ReturnSeat(prefix, b, true)
	refused := join(t, ctx, h, prefix+":"+a, false)
	defer refused.Leave(false, 0)
	idle := join(t, ctx, h, prefix+":"+b, false)
	defer idle.Leave(false, 0)
	other := join(t, ctx, h, prefix+":x", false) // not a seat
	defer other.Leave(false, 0)
	refused.Claim("a", claimant("a"))
	idle.Claim("b", claimant("b"))
	other.Claim("x", claimant("x"))
	ws, _ := h.Reserve(prefix, queue.Pick{Seats: true}, nil)
	require.Len(t, ws, 2, "the seats' waiters alone")
	require.False(t, refused.BeginTry(), "no try while reserved")
	for _, w := range ws {
		w.End(queue.Passed, queue.Grant{})
	}
	requireWoken(t, refused, "after it was passed over")
	kick, _ := refused.Take()
	require.True(t, kick)
	require.True(t, refused.BeginTry())
	refused.EndTry()
	requireNotSignalled(t, idle, "an idle waiter passed over")
	kick, _ = idle.Take()
	require.False(t, kick)
}

// TestReserveFront: a semaphore's release reserves the waiters at the
// front in order, up to its bound, passing over those in a try of their
// own or in another release's hand-off, and stopping at a reader.
func TestReserveFront(t *testing.T) {
	_, client := redistest.Miniredis(t)
	h := queue.For(client)
	ctx := testContext(t)
	ch := chanName(t, 0)
	ws := make([]*queue.Waiter, 5)
	for i := range ws {
		ws[i] = join(t, ctx, h, ch, false)
		defer ws[i].Leave(false, 0)
		ws[i].Claim(strconv.Itoa(i), claimant(strconv.Itoa(i)))
	}
	reader := join(t, ctx, h, ch, true)
	defer reader.Leave(false, 0)
	after := join(t, ctx, h, ch, false)
	defer after.Leave(false, 0)
	after.Claim("after", claimant("after"))

	require.True(t, ws[1].BeginTry(), "waiter 1 tries on its own")
	first, _ := h.Reserve(ch, queue.Pick{Max: 1}, nil)
	require.Equal(t, []*queue.Waiter{ws[0]}, first)
	got, _ := h.Reserve(ch, queue.Pick{Max: 10}, nil)
	require.Equal(t, []*queue.Waiter{ws[2], ws[3], ws[4]}, got, "0 reserved, 1 trying: passed over; the reader ends the front")
	require.Equal(t, claimant("2"), got[0].Claimant())
	ws[1].EndTry()
	for _, w := range got {
		w.End(queue.Passed, queue.Grant{})
	}
	// A release that came during a hand-off: the next waiter must try.
	h.Release(ch)
	first[0].End(queue.Handed, queue.Grant{NoneLeft: true})
	g, ok := first[0].Granted()
	require.True(t, ok)
	require.False(t, g.NoneLeft, "a release came meanwhile")
}

// A reader that got in promotes the writer behind it with a kick, not a
// hint: the writer must try at once to mark itself waiting, since readers
// of other processes may keep the lock from ever falling free.
func TestWriterPromotedByAReaderThatGotInIsKicked(t *testing.T) {
	t.Parallel()
	_, client := redistest.Miniredis(t)
	ctx := testContext(t)
	h := queue.For(client)
	ch := chanName(t, 0)

	r1 := join(t, ctx, h, ch, true)
	x2 := join(t, ctx, h, ch, false)
	r1.Leave(true, 30*time.Second)
	requireWoken(t, x2, "writer promoted by the reader that got in")
	requireTake(t, x2, true, 0, "a kick: try now")
	assert.True(t, x2.Head())
}

// A watcher shares the channel's subscription with its waiters: it hears
// every message, keeps the subscription when the last waiter leaves, and
// its stop drops it when it is the last.
func TestWatch(t *testing.T) {
	forBackends(t, func(t *testing.T, env *redistest.Env) {
		ctx := testContext(t)
		h := queue.For(env.Client)
		ch := chanName(t, 0)
		heard := make(chan string, 8)
		stop, err := h.Watch(ctx, ch, func(p string) { heard <- p })
		require.NoError(t, err)
		requireNumSubEventually(t, ctx, env.Client, 1, ch)
		require.Equal(t, int64(1), env.Client.Publish(ctx, ch, "x").Val())
		select {
		case p := <-heard:
			require.Equal(t, "x", p, "the watcher hears the message itself")
		case <-time.After(5 * time.Second):
			t.Fatal("the watcher heard nothing")
		}

		w := join(t, ctx, h, ch, false)
		w.Leave(false, 0)
		require.Equal(t, int64(1), env.Client.Publish(ctx, ch, "x").Val(), "still subscribed for the watcher")
		<-heard

		stop()
		stop() // twice is once
		requireNumSubEventually(t, ctx, env.Client, 0, ch)
		require.False(t, h.Waiting(ch))
	})
}
