package rwlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/conn"
	"github.com/relock-go/relock/internal/core"
	"github.com/relock-go/relock/internal/testkit/redistest"
	"github.com/relock-go/relock/rwlock"
)

// queueReaders starts n readers of rw on client c and returns once they
// all wait in the hub's queue, none in a try of its own (a release passes
// over a reader in a try, which serves itself).
func queueReaders(t *testing.T, ctx context.Context, rw *rwlock.RWMutex, c redis.UniversalClient, n int) []<-chan acq {
	t.Helper()
	chs := make([]<-chan acq, n)
	for i := range chs {
		chs[i] = goAcquire(func() (context.Context, error) { return rw.RLock(ctx) })
	}
	hub := core.For(conn.Of(c))
	require.Eventually(t, func() bool {
		return hub.Queued(channelOf(rw.Name())) == n && hub.Settled(channelOf(rw.Name()))
	}, settle, poll, "want %d readers queued", n)
	return chs
}

// A writer's release takes the read lock for the readers of its process
// waiting for it, in its own script: they hold it without a try of their
// own, each with a token of its own drawn after the writer's.
func TestWriterHandsReadLockToLocalReaders(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		c := env.NewClient(t)
		tries := redistest.NewScriptFaults(rwlock.AcquireScriptSources()...)
		transfers := redistest.NewScriptFaults(rwlock.WriteReleaseSource())
		c.AddHook(tries)
		c.AddHook(transfers)
		rw := rwlock.New(c, "handoff")
		w, err := rw.Lock(ctx)
		require.NoError(t, err)
		wtok, _ := rwlock.FencingToken(w)
		readers := queueReaders(t, ctx, rw, c, 4)
		before := tries.Seen.Load()

		require.NoError(t, rw.Unlock(w))
		seen := map[int64]bool{}
		var held []context.Context
		for _, r := range readers {
			a := await(t, r, prompt, "reader")
			require.NoError(t, a.err)
			tok, ok := rwlock.FencingToken(a.ctx)
			require.True(t, ok)
			require.Greater(t, tok, wtok)
			require.False(t, seen[tok], "a token of its own")
			seen[tok] = true
			held = append(held, a.ctx)
		}
		require.Equal(t, before, tries.Seen.Load(), "handed over: no reader tried")
		require.NotZero(t, transfers.Seen.Load(), "the release handed the readers the lock")
		require.Equal(t, "read", mode(t, env.U(), "handoff"))
		for _, h := range held {
			require.NoError(t, rw.RUnlock(h))
		}
		onlyBookkeepingLeft(t, env.U(), "handoff")
	})
}

// A writer waiting in another process holds back new readers: a release
// hands the local readers nothing, the writer goes first, then they do.
func TestNoReaderHandOffWhileAWriterWaits(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		a, b := env.NewClient(t), otherClient(t, env)
		rwA, rwB := rwlock.New(a, "turn"), rwlock.New(b, "turn")
		held, err := rwA.Lock(ctx)
		require.NoError(t, err)
		remote := goAcquire(func() (context.Context, error) { return rwB.Lock(ctx) })
		awaitWriterMarked(t, env.U(), "turn", 1)
		readers := queueReaders(t, ctx, rwA, a, 2)

		require.NoError(t, rwA.Unlock(held))
		r := await(t, remote, prompt, "the waiting writer")
		require.NoError(t, r.err)
		time.Sleep(20 * time.Millisecond)
		for _, ch := range readers {
			requireWaiting(t, ch, "a reader while the writer holds")
		}
		require.NoError(t, rwB.Unlock(r.ctx))
		for _, ch := range readers {
			got := await(t, ch, prompt, "reader")
			require.NoError(t, got.err)
			require.NoError(t, rwA.RUnlock(got.ctx))
		}
		onlyBookkeepingLeft(t, env.U(), "turn")
	})
}

// A release whose reply was lost runs again: its latch answers, the
// readers it served find their read lock with a try of their own, and
// each holds one count.
func TestReaderHandOffReleaseRunTwice(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		c := env.NewClient(t)
		twice := redistest.NewScriptFaults(rwlock.WriteReleaseSource())
		c.AddHook(twice)
		rw := rwlock.New(c, "twice")
		w, err := rw.Lock(ctx)
		require.NoError(t, err)
		readers := queueReaders(t, ctx, rw, c, 2)
		twice.Twice = true
		require.NoError(t, rw.Unlock(w))
		var held []context.Context
		for _, ch := range readers {
			got := await(t, ch, prompt, "reader")
			require.NoError(t, got.err)
			held = append(held, got.ctx)
		}
		twice.Twice = false
		f, err := env.U().HGetAll(ctx, "twice").Result()
		require.NoError(t, err)
		require.Len(t, f, 3, "mode and one field per reader: %v", f)
		for k, v := range f {
			if k != "mode" {
				require.Equal(t, "1", v, "reader %s holds one count", k)
			}
		}
		for _, h := range held {
			require.NoError(t, rw.RUnlock(h))
		}
		onlyBookkeepingLeft(t, env.U(), "twice")
	})
}
