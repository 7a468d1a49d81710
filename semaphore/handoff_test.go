package semaphore_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/conn"
	"github.com/relock-go/relock/internal/core"
	"github.com/relock-go/relock/internal/scripts"
	"github.com/relock-go/relock/internal/testkit/redistest"
	"github.com/relock-go/relock/semaphore"
)

// acquired is one waiter's outcome.
type acquired struct {
	i   int
	ctx context.Context
	err error
}

// queueWaiters starts n waiters on s, one after another, each queued in
// the process's local queue before the next starts; they report on the
// returned channel.
func queueWaiters(t *testing.T, ctx context.Context, s *semaphore.Semaphore, hub *core.Hub, n int) <-chan acquired {
	t.Helper()
	out := make(chan acquired, n)
	before := hub.Queued(s.Channel())
	for i := range n {
		go func() {
			h, err := s.Acquire(ctx, 1)
			out <- acquired{i, h, err}
		}()
		require.Eventually(t, func() bool { return hub.Queued(s.Channel()) == before+i+1 }, 5*time.Second, time.Millisecond)
	}
	return out
}

func next(t *testing.T, got <-chan acquired) acquired {
	t.Helper()
	select {
	case a := <-got:
		require.NoError(t, a.err)
		return a
	case <-time.After(10 * time.Second):
		t.Fatal("no waiter got its permit")
		return acquired{}
	}
}

// TestReleaseHandsPermitsToLocalWaiters: a release gives its permit to the
// first waiter of its own process in the same script, so the waiters are
// served in their order without a try of their own, and the semaphore
// counts what they hold.
func TestReleaseHandsPermitsToLocalWaiters(t *testing.T) {
	each(t, func(t *testing.T, env *env) {
		ctx := ctxT(t)
		c := env.NewClient(t)
		tries := redistest.NewScriptFaults(semaphore.AcquireScriptSource())
		c.AddHook(tries)
		s := semaphore.New(c, "handoff", 2)
		h1, err := s.Acquire(ctx, 1)
		require.NoError(t, err)
		h2, err := s.Acquire(ctx, 1)
		require.NoError(t, err)
		got := queueWaiters(t, ctx, s, core.For(conn.Of(c)), 3)
		// The first waiter tried, queued, and tried again as the head to
		// take its place in Redis; the others queued behind it. Its try
		// must have returned too: a release passes over a waiter in the
		// middle of a try (which serves it), so the hand-off watched
		// below would race it on a loaded machine.
		hub := core.For(conn.Of(c))
		require.Eventually(t, func() bool {
			n, err := env.Universal.ZCard(ctx, scripts.Waiters("handoff")).Result()
			return err == nil && n == 1 && hub.Settled(s.Channel())
		}, 5*time.Second, time.Millisecond)
		before := tries.Seen.Load()

		require.NoError(t, s.Release(h1))
		a := next(t, got)
		require.Equal(t, 0, a.i, "first come, first served")
		require.NoError(t, s.Release(h2))
		b := next(t, got)
		require.Equal(t, 1, b.i)
		require.NoError(t, s.Release(a.ctx))
		c3 := next(t, got)
		require.Equal(t, 2, c3.i)
		// (The head would try again after a second: its mark's refresh.)
		require.Equal(t, before, tries.Seen.Load(), "handed over: no waiter tried again")

		n, err := s.Available(ctx)
		require.NoError(t, err)
		require.Zero(t, n, "the two permits are held by the waiters served")
		require.NoError(t, s.Release(b.ctx))
		require.NoError(t, s.Release(c3.ctx))
		n, err = s.Available(ctx)
		require.NoError(t, err)
		require.EqualValues(t, 2, n)
		requireNothingLeft(t, ctx, env, "handoff")
	})
}

// TestHandOffKeepsOtherProcessesTurn: a release does not give its permit
// to a waiter of its own process while a waiter of another process is
// first in line in Redis; that one is served, then the local one.
func TestHandOffKeepsOtherProcessesTurn(t *testing.T) {
	each(t, func(t *testing.T, env *env) {
		ctx := ctxT(t)
		a, b := env.NewClient(t), env.NewClient(t)
		sa, sb := semaphore.New(a, "turn", 1), semaphore.New(b, "turn", 1)
		held, err := sa.Acquire(ctx, 1)
		require.NoError(t, err)
		remote := queueWaiters(t, ctx, sb, core.For(conn.Of(b)), 1)
		require.Eventually(t, func() bool {
			n, err := env.Universal.ZCard(ctx, scripts.Waiters("turn")).Result()
			return err == nil && n == 1
		}, 5*time.Second, time.Millisecond, "the other process's waiter is in line")
		local := queueWaiters(t, ctx, sa, core.For(conn.Of(a)), 1)

		require.NoError(t, sa.Release(held))
		r := next(t, remote)
		select {
		case l := <-local:
			t.Fatalf("the local waiter was served before the one in line: %v", l.err)
		case <-time.After(50 * time.Millisecond):
		}
		require.NoError(t, sb.Release(r.ctx))
		l := next(t, local)
		require.NoError(t, sa.Release(l.ctx))
		requireNothingLeft(t, ctx, env, "turn")
	})
}

// TestHandOffReleaseRunTwice: a release whose reply was lost runs again
// (its latch answers): the waiter it served is told so, once, and the
// semaphore counts one permit.
func TestHandOffReleaseRunTwice(t *testing.T) {
	each(t, func(t *testing.T, env *env) {
		ctx := ctxT(t)
		c := env.NewClient(t)
		twice := redistest.NewScriptFaults(semaphore.ReleaseScriptSource())
		c.AddHook(twice)
		s := semaphore.New(c, "twice", 1)
		held, err := s.Acquire(ctx, 1)
		require.NoError(t, err)
		got := queueWaiters(t, ctx, s, core.For(conn.Of(c)), 1)
		twice.Twice = true
		require.NoError(t, s.Release(held))
		w := next(t, got)
		twice.Twice = false
		n, err := s.Available(ctx)
		require.NoError(t, err)
		require.Zero(t, n)
		require.NoError(t, s.Release(w.ctx))
		n, err = s.Available(ctx)
		require.NoError(t, err)
		require.EqualValues(t, 1, n)
		requireNothingLeft(t, ctx, env, "twice")
	})
}

// requireNothingLeft waits until no key of the semaphore name is left
// but its fencing and latch keys, which expire on their own.
func requireNothingLeft(t *testing.T, ctx context.Context, env *env, name string) {
	t.Helper()
	for _, k := range []string{name, scripts.Permits(name), scripts.Weights(name), scripts.Waiters(name), scripts.WaiterExpiry(name)} {
		n, err := env.Universal.Exists(ctx, k).Result()
		require.NoError(t, err)
		require.Zero(t, n, k)
	}
}

// TestHandOffOfTheLastPermitKeepsTTLs: a release that gives back the only
// permit held and hands it to a local waiter writes the permits and
// weights keys anew in the same script; they get a TTL again, though the
// hash's recorded expiry would spare a busier semaphore the PEXPIREs.
func TestHandOffOfTheLastPermitKeepsTTLs(t *testing.T) {
	each(t, func(t *testing.T, env *env) {
		ctx := ctxT(t)
		c := env.NewClient(t)
		s := semaphore.New(c, "handoff-ttl", 1)
		h, err := s.Acquire(ctx, 1)
		require.NoError(t, err)
		got := queueWaiters(t, ctx, s, core.For(conn.Of(c)), 1)
		hub := core.For(conn.Of(c))
		require.Eventually(t, func() bool { return hub.Settled(s.Channel()) }, 5*time.Second, time.Millisecond)

		require.NoError(t, s.Release(h))
		a := next(t, got)
		ks := redistest.RequireBoundedKeyspace(t, ctx, env.Universal, time.Minute)
		names := map[string]bool{}
		for _, k := range ks {
			names[k.Key] = true
		}
		for _, k := range []string{"handoff-ttl", scripts.Permits("handoff-ttl"), scripts.Weights("handoff-ttl")} {
			require.True(t, names[k], "%s is written (and has a TTL: checked above)", k)
		}
		require.NoError(t, s.Release(a.ctx))
		requireNothingLeft(t, ctx, env, "handoff-ttl")
	})
}
