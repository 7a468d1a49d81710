package core_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/conn"
	"github.com/relock-go/relock/internal/core"
	"github.com/relock-go/relock/internal/testkit/redistest"
)

func TestChannelsAreReferenceCounted(t *testing.T) {
	t.Parallel()
	redistest.ForBackends(t, func(t *testing.T, env *redistest.Env) {
		ctx := testContext(t)
		h := core.For(conn.Of(env.Client))
		ch := chanName(t, 0)

		w1 := join(t, ctx, h, ch, false)
		w2 := join(t, ctx, h, ch, false)
		assert.Equal(t, int64(1), redistest.NumSub(t, ctx, env.Client, ch)[ch], "two waiters, one subscription")
		var connID int64
		if env.Server != nil {
			ps := redistest.PubSubConn(t, ctx, env.Client)
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
		redistest.RequireNumSubEventually(t, ctx, env.Client, 0, ch)
		if env.Server != nil {
			redistest.RequirePubSubConnsEventually(t, ctx, env.Client, 0)
			redistest.RequireConnClosedEventually(t, ctx, env.Client, connID)
		}

		// The channel can be joined again: it is subscribed afresh.
		w3 := join(t, ctx, h, ch, false)
		assert.Equal(t, int64(1), env.Client.Publish(ctx, ch, "x").Val())
		requireWoken(t, w3, "a waiter of the channel joined again")
	})
}

func TestJoinWaitsForTheSubscriptionConfirmation(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	srv := redistest.StartStallServer(t)
	h := core.For(conn.Of(srv.Client(t)))
	ch := chanName(t, 0)

	done := make(chan joined, 1)
	go func() {
		w, err := h.Join(ctx, ch, false)
		done <- joined{w, err}
	}()
	sub := srv.NextSubscribe(t)
	require.Equal(t, ch, sub.Channel)
	select {
	case <-done:
		t.Fatal("Join returned before Redis confirmed the subscription")
	default:
	}
	assert.True(t, h.Waiting(ch), "the waiter is queued while its subscription is in flight")

	srv.Confirm(t, sub)
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
	srv := redistest.StartStallServer(t)
	h := core.For(conn.Of(srv.Client(t)))
	ch := chanName(t, 0)

	jctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	done := make(chan joined, 1)
	go func() {
		w, err := h.Join(jctx, ch, false)
		done <- joined{w, err}
	}()
	sub := srv.NextSubscribe(t)
	require.Equal(t, ch, sub.Channel)

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
	assert.Equal(t, ch, srv.NextUnsubscribe(t).Channel, "its channel is unsubscribed")
}

// A watcher shares the channel's subscription with its waiters: it is
// told ("") when Redis confirms the subscription, as a message published
// before that reached nobody; it hears every message, keeps the
// subscription when the last waiter leaves, and its stop drops it when it
// is the last.
func TestWatch(t *testing.T) {
	redistest.ForBackends(t, func(t *testing.T, env *redistest.Env) {
		ctx := testContext(t)
		h := core.For(conn.Of(env.Client))
		ch := chanName(t, 0)
		heard := make(chan string, 8)
		stop, err := h.Watch(ctx, ch, func(p string) { heard <- p })
		require.NoError(t, err)
		select {
		case p := <-heard:
			require.Empty(t, p, "the watcher is told of the confirmation")
		case <-time.After(5 * time.Second):
			t.Fatal("the watcher was not told of the confirmation")
		}
		require.Equal(t, int64(1), env.Client.PubSubNumSub(ctx, ch).Val()[ch], "confirmed")
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
		redistest.RequireNumSubEventually(t, ctx, env.Client, 0, ch)
		require.False(t, h.Waiting(ch))
	})
}

// Waiters of many channels, joined at once, are each queued on their own
// channel, and their departure leaves the hub no channel subscribed.
func TestConcurrentJoinsOfManyChannels(t *testing.T) {
	t.Parallel()
	_, client := redistest.Miniredis(t)
	ctx := testContext(t)
	h := core.For(conn.Of(client))

	const n = 100
	channels := make([]string, n)
	waiters := make([]*core.Waiter, n)
	for i := range channels {
		channels[i] = chanName(t, i)
	}
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
	subs := redistest.NumSub(t, ctx, client, channels...)
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
	_, _, subscribed := h.Footprint()
	assert.Zero(t, subscribed, "the hub keeps no channel of a waiter that left")
	redistest.RequireNumSubEventually(t, ctx, client, 0, channels...)
}

// A Join whose subscription cannot be made (the server is down) fails and
// leaves no waiter queued; the waiters already in line stay.
func TestJoinThatCannotSubscribeLeavesTheQueue(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	srv := redistest.StartServer(t)
	client := srv.Client(t)
	admin := srv.Client(t)
	h := core.For(conn.Of(client))
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
	assert.True(t, h.Waiting(kept), "the waiter already in line stays")

	srv.Restart(t)
	redistest.RequireNumSubEventually(t, ctx, admin, 1, kept)
	w.Leave(false, 0)
	redistest.RequirePubSubConnsEventually(t, ctx, admin, 0)
}

// A dropped connection may have lost an unlock message: the head alone is
// woken to try, and once the channel is subscribed again a message wakes
// the head alone, as before.
func TestConnectionDropWakesTheHeadAlone(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	srv := redistest.StartServer(t)
	client := srv.Client(t)
	admin := srv.Client(t)
	h := core.For(conn.Of(client))
	ch := chanName(t, 0)

	w1 := join(t, ctx, h, ch, false)
	w2 := join(t, ctx, h, ch, false)
	require.Equal(t, int64(1), redistest.NumSub(t, ctx, admin, ch)[ch])

	srv.Kill()
	// Unlock messages may have been lost while the connection was down:
	// the head is woken to try again.
	requireWoken(t, w1, "head after the connection dropped")
	kick, _ := w1.Take()
	assert.True(t, kick, "the head is kicked on a reconnect")
	requireNotSignalled(t, w2, "second waiter after the connection dropped")

	srv.Restart(t)
	// go-redis subscribes the channel again on the new connection.
	redistest.RequireNumSubEventually(t, ctx, admin, 1, ch)
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

	w1.Leave(false, 0)
	w2.Leave(false, 0)
	redistest.RequireNumSubEventually(t, ctx, admin, 0, ch)
	redistest.RequirePubSubConnsEventually(t, ctx, admin, 0)
}
