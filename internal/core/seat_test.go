package core_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/conn"
	"github.com/relock-go/relock/internal/core"
	"github.com/relock-go/relock/internal/testkit/redistest"
)

// A seat serves one waiter after another on one subscription: the second
// waiter of a seat sends no SUBSCRIBE, and the seat's channel goes once
// no seat of the lock was taken for Linger.
func TestSeatKeepsItsSubscription(t *testing.T) {
	t.Parallel()
	redistest.ForBackends(t, func(t *testing.T, env *redistest.Env) {
		ctx := testContext(t)
		h := core.For(conn.Of(env.Client))
		lockCh := chanName(t, 0)

		seat := h.TakeSeat(lockCh)
		ch := lockCh + ":" + seat
		w := join(t, ctx, h, ch, false)
		w.Leave(true, 0)
		h.ReturnSeat(lockCh, seat, true)
		_, _, subscribed := h.Footprint()
		require.Equal(t, 1, subscribed, "a free seat keeps its channel")

		again := h.TakeSeat(lockCh)
		require.Equal(t, seat, again, "a free seat is taken again")
		other := h.TakeSeat(lockCh)
		require.NotEqual(t, seat, other, "a taken seat is nobody else's")
		subscribes := func() int {
			if env.Mini != nil {
				return 0 // miniredis keeps no commandstats
			}
			n, err := redistest.CommandCounts(ctx, env.Client)
			require.NoError(t, err)
			return n["subscribe"]
		}
		subs := subscribes()
		w = join(t, ctx, h, ch, false)
		require.Equal(t, subs, subscribes(), "no SUBSCRIBE for the seat's next waiter")
		w.Leave(false, 0)
		h.ReturnSeat(lockCh, again, true)
		h.ReturnSeat(lockCh, other, true)

		require.Eventually(t, func() bool {
			queues, _, channels := h.Footprint()
			return queues == 0 && channels == 0
		}, settle, poll, "idle seats are dropped with their subscriptions")
		if env.Mini == nil {
			redistest.RequireNumSubEventually(t, ctx, env.Client, 0, ch)
		}
	})
}

// A seat whose waiter may have left a place in Redis is not taken again.
func TestSeatNotReusedAfterAFailedWithdrawal(t *testing.T) {
	_, client := redistest.Miniredis(t)
	h := core.For(conn.Of(client))
	lockCh := chanName(t, 0)
	seat := h.TakeSeat(lockCh)
	h.ReturnSeat(lockCh, seat, false)
	require.NotEqual(t, seat, h.TakeSeat(lockCh))
}

// A grant names the owner whose hold the release wrote: one for another
// owner (a seat's earlier waiter, whose grant crossed its departure) only
// wakes the seat's waiter to try; its own is taken.
func TestGrantForAnotherOwnerIsAWake(t *testing.T) {
	t.Parallel()
	redistest.ForBackends(t, func(t *testing.T, env *redistest.Env) {
		ctx := testContext(t)
		h := core.For(conn.Of(env.Client))
		ch := chanName(t, 0)
		w := join(t, ctx, h, ch, false)
		w.Claim("me", claimant("me"))

		require.NoError(t, env.Client.Publish(ctx, ch, "relock:grant:7:1000:someone-else").Err())
		requireWoken(t, w, "a grant for another owner")
		kick, _ := w.Take()
		require.True(t, kick, "it tries instead")
		_, granted := w.Granted()
		require.False(t, granted, "another owner's grant is not the waiter's")

		require.NoError(t, env.Client.Publish(ctx, ch, "relock:grant:8:1500:me").Err())
		requireWoken(t, w, "its own grant")
		g, granted := w.Granted()
		require.True(t, granted)
		require.Equal(t, core.Grant{Token: 8, TTL: 1500 * time.Millisecond, Owner: "me"}, g)
	})
}

// A free seat goes Linger after its return even while other seats of the
// lock stay taken (one long wait beside a burst that is over).
func TestFreeSeatGoesWhileOthersAreTaken(t *testing.T) {
	t.Parallel()
	redistest.ForBackends(t, func(t *testing.T, env *redistest.Env) {
		ctx := testContext(t)
		h := core.For(conn.Of(env.Client))
		lockCh := chanName(t, 0)
		long := h.TakeSeat(lockCh)
		defer h.ReturnSeat(lockCh, long, true)
		burst := h.TakeSeat(lockCh)
		w := join(t, ctx, h, lockCh+":"+burst, false)
		w.Leave(true, 0)
		h.ReturnSeat(lockCh, burst, true)
		_, _, channels := h.Footprint()
		require.Equal(t, 1, channels, "the free seat keeps its channel for a while")
		require.Eventually(t, func() bool {
			_, _, channels := h.Footprint()
			return channels == 0
		}, settle, poll, "the free seat went with its subscription")
		again := h.TakeSeat(lockCh)
		defer h.ReturnSeat(lockCh, again, true)
		require.NotEqual(t, burst, again, "a dropped seat is not taken again")
	})
}
