package core_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/conn"
	"github.com/relock-go/relock/internal/core"
	"github.com/relock-go/relock/internal/testkit/redistest"
)

func TestMessageWakesOnlyTheHead(t *testing.T) {
	t.Parallel()
	redistest.ForBackends(t, func(t *testing.T, env *redistest.Env) {
		ctx := testContext(t)
		h := core.For(conn.Of(env.Client))
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
	h := core.For(conn.Of(client))
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
	h := core.For(conn.Of(client))
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
	redistest.ForBackends(t, func(t *testing.T, env *redistest.Env) {
		ctx := testContext(t)
		h := core.For(conn.Of(env.Client))
		ch := chanName(t, 0)

		r1 := join(t, ctx, h, ch, true)
		r2 := join(t, ctx, h, ch, true)
		r3 := join(t, ctx, h, ch, true)
		x4 := join(t, ctx, h, ch, false)
		r5 := join(t, ctx, h, ch, true)
		for i, w := range []*core.Waiter{r1, r2, r3} {
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
		for i, w := range []*core.Waiter{r1, r2, r3} {
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
	h := core.For(conn.Of(client))
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

// A reader that got in promotes the writer behind it with a kick, not a
// hint: the writer must try at once to mark itself waiting, since readers
// of other processes may keep the lock from ever falling free.
func TestWriterPromotedByAReaderThatGotInIsKicked(t *testing.T) {
	t.Parallel()
	_, client := redistest.Miniredis(t)
	ctx := testContext(t)
	h := core.For(conn.Of(client))
	ch := chanName(t, 0)

	r1 := join(t, ctx, h, ch, true)
	x2 := join(t, ctx, h, ch, false)
	r1.Leave(true, 30*time.Second)
	requireWoken(t, x2, "writer promoted by the reader that got in")
	requireTake(t, x2, true, 0, "a kick: try now")
	assert.True(t, x2.Head())
}

func TestReleaseWakesTheHead(t *testing.T) {
	t.Parallel()
	redistest.ForBackends(t, func(t *testing.T, env *redistest.Env) {
		ctx := testContext(t)
		h := core.For(conn.Of(env.Client))
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
	h := core.For(conn.Of(client))
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

	h1 := core.For(conn.Of(c1))
	require.NotNil(t, h1)
	assert.Same(t, h1, core.For(conn.Of(c1)))
	assert.NotSame(t, h1, core.For(conn.Of(c2)))

	// Concurrent first uses agree on one hub.
	c3 := redis.NewClient(&redis.Options{Addr: c1.Options().Addr})
	t.Cleanup(func() { _ = c3.Close() })
	hubs := make([]*core.Hub, 8)
	var wg sync.WaitGroup
	for i := range hubs {
		wg.Go(func() { hubs[i] = core.For(conn.Of(c3)) })
	}
	wg.Wait()
	for _, h := range hubs {
		assert.Same(t, hubs[0], h)
	}
}

// The hub publishes with its client's transport: SPUBLISH on a cluster.
func TestPublishCommandIsTheTransports(t *testing.T) {
	t.Parallel()
	mr, client := redistest.Miniredis(t)
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{mr.Addr()}})
	t.Cleanup(func() { _ = cc.Close() })
	for _, c := range []redis.UniversalClient{client, cc} {
		assert.Equal(t, conn.PubSubFor(conn.Of(c)).PublishCommand(), core.For(conn.Of(c)).PublishCommand(), "%T", c)
	}
	assert.Equal(t, "spublish", core.For(conn.Of(cc)).PublishCommand())
}
