package core

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/relock-go/relock/internal/conn"
	"github.com/relock-go/relock/internal/errs"
	"github.com/relock-go/relock/internal/lease"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// A fixed lease on a fake clock never talks to Redis, so the client is
// never dialled.
func setup(t *testing.T) (*lease.Watchdog, *lease.FakeClock, redis.UniversalClient) {
	clk := lease.NewFakeClock(time.Unix(1_700_000_000, 0))
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	t.Cleanup(func() { _ = c.Close() })
	return lease.New(lease.WithClock(clk)), clk, c
}

func spec(c redis.UniversalClient, id string) lease.Spec {
	return lease.Spec{Targets: []lease.Target{{Client: conn.Of(c), Keys: []string{"k"}}}, Timeout: time.Second, ID: lease.ID{Lock: id}, Name: "k", Primitive: "test"}
}

// start is Start for a lease in time, which it always accepts.
func start(t *testing.T, parent context.Context, key Key, h *Hold, release ReleaseFunc) context.Context {
	t.Helper()
	ctx, err := Start(parent, key, h, release)
	require.NoError(t, err)
	return ctx
}

func TestEndOnce(t *testing.T) {
	wd, clk, c := setup(t)
	key := NewKey(ClientOf(c), "test", "k", "")
	var releases atomic.Int32
	lease := Lease(wd, spec(c, "a"), false, false, clk.Now())
	ctx := start(t, context.Background(), key, &Hold{Owner: "o", Token: 7, Lease: lease}, func(ctx context.Context, h *Hold) error {
		releases.Add(1)
		h.Lease.Stop()
		return nil
	})
	tok, ok := Token(ctx)
	require.True(t, ok)
	require.EqualValues(t, 7, tok)
	require.ErrorIs(t, End(context.Background(), key, nil), errs.ErrNotHeld, "no hold in that context")
	require.NoError(t, End(ctx, key, nil))
	require.ErrorIs(t, context.Cause(ctx), context.Canceled)
	require.ErrorIs(t, End(ctx, key, nil), errs.ErrNotHeld)
	require.EqualValues(t, 1, releases.Load())
}

// A Scoped hold ends with its acquiring context, released in the
// background.
func TestScopedParentEndReleasesInBackground(t *testing.T) {
	wd, clk, c := setup(t)
	key := NewKey(ClientOf(c), "test", "k", "")
	parent, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	lease := Lease(wd, spec(c, "b"), false, false, clk.Now())
	ctx := start(t, parent, key, &Hold{Lease: lease, Scoped: true}, func(ctx context.Context, h *Hold) error {
		require.NoError(t, ctx.Err(), "the release runs on a context that is not cancelled")
		h.Lease.Stop()
		close(done)
		return nil
	})
	cancel()
	<-done
	require.NoError(t, End(ctx, key, nil), "released because its context ended: nil")
	require.ErrorIs(t, End(ctx, key, nil), errs.ErrNotHeld)
}

func TestLostHold(t *testing.T) {
	wd, clk, c := setup(t)
	key := NewKey(ClientOf(c), "test", "k", "")
	lease := Lease(wd, spec(c, "c"), false, false, clk.Now())
	inner := Lease(wd, spec(c, "c"), true, false, clk.Now())
	require.Same(t, lease, inner, "a reentrant acquisition shares the lease")
	require.Equal(t, 2, lease.Refs())
	ctx := start(t, context.Background(), key, &Hold{Lease: lease}, func(context.Context, *Hold) error {
		t.Error("a lost hold is not released")
		return nil
	})
	nested := start(t, ctx, NewKey(ClientOf(c), "test", "k2", ""), &Hold{Lease: lease}, func(context.Context, *Hold) error {
		t.Error("a lost hold is not released")
		return nil
	})
	lease.Lose("test")
	require.ErrorIs(t, context.Cause(ctx), errs.ErrLockLost)
	require.ErrorIs(t, End(ctx, key, nil), errs.ErrLockLost)
	require.ErrorIs(t, End(nested, NewKey(ClientOf(c), "test", "k2", ""), nil), errs.ErrLockLost,
		"a hold whose parent ended because of the loss is lost, not abandoned")
	fresh := Lease(wd, spec(c, "c"), false, false, clk.Now())
	require.NotSame(t, lease, fresh)
	fresh.Stop()
}

// A holder that resumes after a pause (SIGSTOP, a stalled VM) past its
// lease must find its hold ended at once, even though the watchdog's
// goroutine has not yet run: Err and Done ask the lease.
func TestResumedHolderSeesLapseAtOnce(t *testing.T) {
	wd, clk, c := setup(t)
	key := NewKey(ClientOf(c), "test", "k", "")
	lease := Lease(wd, spec(c, "d"), false, false, clk.Now())
	ctx := start(t, context.Background(), key, &Hold{Lease: lease}, func(context.Context, *Hold) error {
		t.Error("a lost hold is not released")
		return nil
	})
	require.NoError(t, ctx.Err())
	clk.Advance(500 * time.Millisecond)
	require.NoError(t, ctx.Err(), "within the lease")
	clk.Advance(time.Second) // past the lease; the wheel's goroutine may not have run yet
	require.ErrorIs(t, ctx.Err(), context.Canceled)
	require.ErrorIs(t, context.Cause(ctx), errs.ErrLockLost)
	select {
	case <-ctx.Done():
	default:
		t.Fatal("Done is not closed")
	}
	require.ErrorIs(t, End(ctx, key, nil), errs.ErrLockLost)
	require.EqualValues(t, 1, wd.Stats().Lost, "declared lost once, by Check or by the wheel")
}

type valueKey struct{}

// By default the acquiring context bounded the wait only: its end and its
// deadline do not reach the hold, whose context keeps its values.
func TestParentBoundsWaitOnly(t *testing.T) {
	wd, clk, c := setup(t)
	key := NewKey(ClientOf(c), "test", "k", "")
	parent, cancel := context.WithTimeout(context.WithValue(context.Background(), valueKey{}, "v"), time.Hour)
	var releases atomic.Int32
	lease := Lease(wd, spec(c, "w"), false, false, clk.Now())
	ctx := start(t, parent, key, &Hold{Owner: "o", Lease: lease}, func(_ context.Context, h *Hold) error {
		releases.Add(1)
		h.Lease.Stop()
		return nil
	})
	_, hasDeadline := ctx.Deadline()
	require.False(t, hasDeadline, "the wait's deadline is not the hold's")
	cancel()
	time.Sleep(20 * time.Millisecond) // a scoped hold would be released by now
	require.NoError(t, ctx.Err(), "the hold outlives the context that bounded its wait")
	require.Zero(t, releases.Load())
	require.Equal(t, "v", ctx.Value(valueKey{}), "values are kept")
	require.NoError(t, End(ctx, key, nil))
	require.EqualValues(t, 1, releases.Load())
	require.ErrorIs(t, context.Cause(ctx), context.Canceled)
}

// Re-entry is per lock: a hold lends its owner to acquisitions of its own
// key (or one it answers for), not to other locks; NewOwner hides holds.
func TestOwnerPerLock(t *testing.T) {
	wd, clk, c := setup(t)
	x := NewKey(ClientOf(c), "test", "x", "")
	y := NewKey(ClientOf(c), "test", "y", "")
	member := NewKey(ClientOf(c), "test", "member", "")
	stop := func(_ context.Context, h *Hold) error { h.Lease.Stop(); return nil }
	heldY := start(t, context.Background(), y, &Hold{Owner: "owner-y", Lease: Lease(wd, spec(c, "y"), false, false, clk.Now()), Also: []Key{member}}, stop)

	id, ok := OwnerOf(heldY, y)
	require.True(t, ok)
	require.Equal(t, "owner-y", id)
	_, ok = OwnerOf(heldY, x)
	require.False(t, ok, "a hold of y is no owner of x")
	id, ok = OwnerOf(heldY, x, member)
	require.True(t, ok, "a hold answers for the keys it was given (a Redlock's members)")
	require.Equal(t, "owner-y", id)

	fanned, cancel := context.WithCancel(heldY) // errgroup-style fan-out
	defer cancel()
	_, ok = OwnerOf(fanned, x)
	require.False(t, ok)
	id, _ = Owner(fanned)
	require.Equal(t, "owner-y", id, "inspection still finds the innermost hold")

	fresh := NewOwner(heldY)
	_, ok = OwnerOf(fresh, y)
	require.False(t, ok, "NewOwner hides the holds")
	_, ok = Owner(fresh)
	require.False(t, ok)
	_, ok = Token(fresh)
	require.False(t, ok, "nor their tokens")
	require.Nil(t, fresh.Done(), "nor the cancellation of the hold's context")
	_, ok = From(heldY, member)
	require.False(t, ok, "a key a hold answers for lends its owner only: no End or Detach through it")

	pinned := WithOwner(context.Background(), "pinned")
	id, ok = OwnerOf(pinned, x)
	require.True(t, ok)
	require.Equal(t, "pinned", id)
	require.NoError(t, End(heldY, y, nil))
}

// A loss the watchdog's goroutine declared but whose callbacks it has not
// run yet (here: none registered) still ends the hold's context when the
// holder asks it: a holder resumed after a pause must not see its hold
// live for an instant.
func TestLossSeenBeforeItsCallbacksRun(t *testing.T) {
	wd, clk, c := setup(t)
	key := NewKey(ClientOf(c), "test", "k", "")
	h := &Hold{Owner: "o", Lease: Lease(wd, spec(c, "late"), false, false, clk.Now())}
	ctx := start(t, context.Background(), key, h, func(ctx context.Context, h *Hold) error { return nil })
	h.Lease.RemoveLost(h.lostID) // as if the goroutine that found the loss had not reached the hold yet
	h.Lease.Lose("found by the watchdog's goroutine")
	clk.Advance(2 * time.Second) // the holder runs after its lease's end
	require.Error(t, ctx.Err(), "Err asks the lease")
	require.ErrorIs(t, context.Cause(ctx), errs.ErrLockLost)
}

// TestKeysMadeApartAreOne: two values of one lock (two lock.New of one
// name on one client) make their keys apart; a hold taken through one is
// found through the other, and not through a key of another lock, side or
// client. A lookup by a key allocates nothing.
func TestKeysMadeApartAreOne(t *testing.T) {
	wd, clk, c := setup(t)
	other := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	t.Cleanup(func() { _ = other.Close() })
	a, b := NewKey(ClientOf(c), "lock", "n", ""), NewKey(ClientOf(c), "lock", "n", "")
	require.True(t, a.Is(b))
	for _, k := range []Key{NewKey(ClientOf(c), "lock", "m", ""), NewKey(ClientOf(c), "rlock", "n", ""), NewKey(ClientOf(other), "lock", "n", ""), NewKey(ClientOf(c), "lock", "n", "x"), {}} {
		require.False(t, a.Is(k), "%+v", k.f)
	}
	require.False(t, Key{}.Is(Key{}), "a key of no primitive names none")

	ctx := start(t, context.Background(), a, &Hold{Owner: "o", Lease: Lease(wd, spec(c, "n"), false, false, clk.Now())}, func(_ context.Context, h *Hold) error {
		h.Lease.Stop()
		return nil
	})
	h, ok := From(ctx, b)
	require.True(t, ok)
	require.Equal(t, "o", h.Owner)
	_, ok = From(ctx, NewKey(ClientOf(c), "lock", "m", ""))
	require.False(t, ok)
	require.Zero(t, testing.AllocsPerRun(100, func() { _, _ = From(ctx, b) }), "allocations of a lookup")
	require.NoError(t, End(ctx, b, nil))
}

// A release that meets a hold while its loss is being recorded reports
// the loss: the loss's error is in place before the state says lost.
func TestEndDuringLossReportsTheLoss(t *testing.T) {
	for _, op := range []string{"End", "Detach"} {
		t.Run(op, func(t *testing.T) {
			wd, clk, c := setup(t)
			key := NewKey(ClientOf(c), "test", "k", "")
			live := &Live{}
			h := &Hold{Owner: "o", Live: live, Lease: Lease(wd, spec(c, "loss:"+op), false, false, clk.Now())}
			ctx := start(t, context.Background(), key, h, func(context.Context, *Hold) error {
				t.Error("a lost hold is not released")
				return nil
			})
			// Held, the Live set stops markLost between its state change
			// and the end of its bookkeeping.
			live.mu.Lock()
			marked := make(chan struct{})
			go func() {
				defer close(marked)
				h.markLost(errs.ErrLockLost)
			}()
			require.Eventually(t, func() bool { return h.state.Load() == lost }, time.Second, time.Millisecond)
			var err error
			if op == "End" {
				err = End(ctx, key, live)
			} else {
				_, _, err = Detach(ctx, key, live)
			}
			live.mu.Unlock()
			<-marked
			require.ErrorIs(t, err, errs.ErrLockLost)
			h.Lease.Stop()
		})
	}
}

// A lease that lapsed before its hold began (the grant's reply came
// late) makes no hold: Start gives it back through release, once, and
// returns ErrLockLost; nothing is left registered.
func TestStartRefusesALapsedLease(t *testing.T) {
	wd, clk, c := setup(t)
	key := NewKey(ClientOf(c), "test", "k", "")
	live := &Live{}
	l := Lease(wd, spec(c, "lapsed"), false, false, clk.Now())
	clk.Advance(2 * time.Second) // past the 1 s lease, before the wheel turns
	var releases atomic.Int32
	ctx, err := Start(context.Background(), key, &Hold{Owner: "o", Token: 3, Lease: l, Live: live}, func(_ context.Context, h *Hold) error {
		releases.Add(1)
		require.Equal(t, "o", h.Owner)
		h.Lease.Release()
		return nil
	})
	require.Nil(t, ctx)
	require.ErrorIs(t, err, errs.ErrLockLost)
	require.ErrorContains(t, err, "the lease of 1s lapsed before the grant's reply arrived")
	require.EqualValues(t, 1, releases.Load())
	require.ErrorIs(t, l.Lost(), errs.ErrLockLost)
	require.Zero(t, wd.Stats().Held)
	require.Empty(t, live.holds)
}

// A release through the hold's own context runs on that context's values
// without its cancellation, as context.WithoutCancel would give it: not
// done, no cause, the caller's values and the hold's own still there.
func TestReleaseThroughTheHoldsContextIsNotCancelled(t *testing.T) {
	wd, clk, c := setup(t)
	key := NewKey(ClientOf(c), "test", "k", "")
	parent := context.WithValue(context.Background(), valueKey{}, "v")
	var seen context.Context
	ctx := start(t, parent, key, &Hold{Owner: "o", Lease: Lease(wd, spec(c, "a"), false, false, clk.Now())}, func(ctx context.Context, h *Hold) error {
		seen = ctx
		h.Lease.Stop()
		return nil
	})
	require.NoError(t, End(ctx, key, nil))
	require.Error(t, ctx.Err(), "the hold's context ends with the hold")
	require.NoError(t, seen.Err())
	require.Nil(t, seen.Done())
	require.NoError(t, context.Cause(seen))
	_, hasDeadline := seen.Deadline()
	require.False(t, hasDeadline)
	require.Equal(t, "v", seen.Value(valueKey{}))
	got, ok := From(seen, key)
	require.True(t, ok, "the release still finds its hold")
	require.Same(t, got, seen.Value(key))
	child, cancel := context.WithCancel(seen)
	defer cancel()
	require.NoError(t, child.Err(), "a context made from it starts live")
}
