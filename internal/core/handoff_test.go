package core_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/conn"
	"github.com/relock-go/relock/internal/core"
	"github.com/relock-go/relock/internal/testkit/redistest"
)

// TestLeaveStopsReservations: once Leave returns, no release can reserve the
// waiter; a reservation made before Leave is waited for, and the lock it
// granted is returned so that the waiter gives it back.
func TestLeaveStopsReservations(t *testing.T) {
	_, client := redistest.Miniredis(t)
	h := core.For(conn.Of(client))
	ctx := testContext(t)
	ch := chanName(t, 0)

	w := join(t, ctx, h, ch, false)
	w.Claim("me", claimant("me"))
	given, handed := w.Leave(false, 0)
	require.False(t, handed, given)
	r, _ := h.Reserve(ch, core.Pick{Head: true}, nil)
	require.Empty(t, r, "a waiter that left is not reserved")

	w = join(t, ctx, h, ch, false)
	w.Claim("me", claimant("me"))
	r, _ = h.Reserve(ch, core.Pick{Head: true}, nil)
	require.Equal(t, []*core.Waiter{w}, r)
	require.Equal(t, claimant("me"), w.Claimant())
	quit := make(chan core.Grant, 1)
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
	w.End(core.Handed, core.Grant{Token: 42})
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
	h := core.For(conn.Of(client))
	ctx := testContext(t)
	ch := chanName(t, 0)
	w := join(t, ctx, h, ch, false)
	defer w.Leave(false, 0)
	w.Claim("me", claimant("me"))
	r, _ := h.Reserve(ch, core.Pick{Head: true}, nil)
	require.Equal(t, []*core.Waiter{w}, r)
	require.False(t, w.BeginTry(), "no try while reserved")
	w.End(core.Refused, core.Grant{})
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
	h := core.For(conn.Of(client))
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
	ws, _ := h.Reserve(prefix, core.Pick{Seats: true}, nil)
	require.Len(t, ws, 2, "the seats' waiters alone")
	require.False(t, refused.BeginTry(), "no try while reserved")
	for _, w := range ws {
		w.End(core.Passed, core.Grant{})
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
	h := core.For(conn.Of(client))
	ctx := testContext(t)
	ch := chanName(t, 0)
	ws := make([]*core.Waiter, 5)
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
	first, _ := h.Reserve(ch, core.Pick{Max: 1}, nil)
	require.Equal(t, []*core.Waiter{ws[0]}, first)
	got, _ := h.Reserve(ch, core.Pick{Max: 10}, nil)
	require.Equal(t, []*core.Waiter{ws[2], ws[3], ws[4]}, got, "0 reserved, 1 trying: passed over; the reader ends the front")
	require.Equal(t, claimant("2"), got[0].Claimant())
	ws[1].EndTry()
	for _, w := range got {
		w.End(core.Passed, core.Grant{})
	}
	// A release that came during a hand-off: the next waiter must try.
	h.Release(ch)
	first[0].End(core.Handed, core.Grant{NoneLeft: true})
	g, ok := first[0].Granted()
	require.True(t, ok)
	require.False(t, g.NoneLeft, "a release came meanwhile")
}
