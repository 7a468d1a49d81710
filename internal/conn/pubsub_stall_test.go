package conn_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/conn"
	"github.com/relock-go/relock/internal/testkit/redistest"
)

func TestReadyWaitsForTheConfirmation(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	srv := redistest.StartStallServer(t)
	ps := conn.PubSubFor(conn.Of(srv.Client(t)))
	ch := chanName(t, 0)

	sub := subscribe(t, ctx, ps, ch, newRecorder())
	stalled := srv.NextSubscribe(t)
	require.Equal(t, ch, stalled.Channel)
	requireNotReady(t, sub, "before Redis confirmed the subscription")
	assert.Equal(t, 1, ps.Channels(), "the channel counts while its subscription is in flight")

	srv.Confirm(t, stalled)
	requireReady(t, sub, "after the confirmation")
	sub.Cancel()
	assert.Equal(t, ch, srv.NextUnsubscribe(t).Channel, "Cancel unsubscribes the channel")
}

// A subscription that was cancelled while in flight still gets its
// SUBSCRIBE reply from Redis, ahead of the replies to the UNSUBSCRIBE and
// to a new SUBSCRIBE of the same channel. That stale reply must not count
// as the confirmation of the new one: Ready would close before Redis has
// subscribed the channel again, and an unlock published in between would
// be missed (a waiter would then sleep until its TTL fallback).
func TestConfirmationOfACancelledSubscriptionIsNotTheNextOnes(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	srv := redistest.StartStallServer(t)
	ps := conn.PubSubFor(conn.Of(srv.Client(t)))
	ch, other := chanName(t, 0), chanName(t, 1)
	rec := newRecorder()

	// A subscription of another channel keeps the connection busy; its
	// confirmation serves as a marker of how far the transport has read.
	marker := subscribe(t, ctx, ps, other, rec)
	subOther := srv.NextSubscribe(t)
	require.Equal(t, other, subOther.Channel)

	// The first subscription of ch is cancelled before its SUBSCRIBE is
	// answered.
	first := subscribe(t, ctx, ps, ch, rec)
	sub1 := srv.NextSubscribe(t)
	require.Equal(t, ch, sub1.Channel)
	first.Cancel()
	select {
	case <-first.Ready():
	default:
		t.Fatal("a cancelled subscription's Ready is not closed")
	}
	unsub1 := srv.NextUnsubscribe(t)
	require.Equal(t, ch, unsub1.Channel)

	// A new subscription of the same channel: a new SUBSCRIBE goes out.
	second := subscribe(t, ctx, ps, ch, rec)
	sub2 := srv.NextSubscribe(t)
	require.Equal(t, ch, sub2.Channel)

	// Redis answers in order: the abandoned SUBSCRIBE, the UNSUBSCRIBE,
	// and (here) the other channel's SUBSCRIBE; the new SUBSCRIBE of ch is
	// not answered yet.
	srv.Confirm(t, sub1)
	srv.ConfirmUnsubscribe(t, unsub1)
	srv.Confirm(t, subOther)
	requireReady(t, marker, "marker subscription")
	// The transport has read the stale reply. A Ready it closed would be
	// closed by now; the grace can only hide the bug, never fail a correct
	// transport.
	select {
	case <-second.Ready():
		t.Fatal("Ready closed on the confirmation of the cancelled subscription, before its own SUBSCRIBE was answered")
	case <-time.After(300 * time.Millisecond):
	}

	srv.Confirm(t, sub2)
	requireReady(t, second, "second subscription")
}
