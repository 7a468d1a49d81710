package lock_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/testkit/redistest"
	"github.com/relock-go/relock/lock"
	"github.com/relock-go/relock/semaphore"
)

// tokenGone asserts that neither FencingToken of mu answers for ctx: a
// store fenced by the token must not be shown one whose hold has ended.
func tokenGone(t *testing.T, mu *lock.Mutex, ctx context.Context, why string) {
	t.Helper()
	tok, ok := lock.FencingToken(ctx)
	require.False(t, ok, "lock.FencingToken after %s (got %d)", why, tok)
	tok, ok = mu.FencingToken(ctx)
	require.False(t, ok, "Mutex.FencingToken after %s (got %d)", why, tok)
}

func TestFencingTokenEndsWithHold(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		mu := lock.New(env.Universal, "fence:ends")

		held, err := mu.Lock(ctx)
		require.NoError(t, err)
		tok, ok := lock.FencingToken(held)
		require.True(t, ok)
		require.Positive(t, tok)
		inner, err := mu.Lock(held)
		require.NoError(t, err)
		innerTok, ok := mu.FencingToken(inner)
		require.True(t, ok)
		require.Greater(t, innerTok, tok)
		require.NoError(t, mu.Unlock(inner))
		tokenGone(t, mu, inner, "an inner Unlock")
		got, ok := mu.FencingToken(held)
		require.True(t, ok, "the outer hold is still live")
		require.Equal(t, tok, got)
		require.NoError(t, mu.Unlock(held))
		tokenGone(t, mu, held, "Unlock")

		// Lost: another process force-unlocked it.
		held, err = mu.Lock(ctx)
		require.NoError(t, err)
		_, err = lock.New(env.Universal, "fence:ends").ForceUnlock(ctx)
		require.NoError(t, err)
		<-held.Done()
		tokenGone(t, mu, held, "the hold was lost")

		// Released by its scope: Do returned, or the acquiring context ended.
		var inDo context.Context
		require.NoError(t, mu.Do(ctx, func(h context.Context) error { inDo = h; return nil }))
		tokenGone(t, mu, inDo, "Do returned")
		parent, cancel := context.WithCancel(ctx)
		scoped, err := mu.Lock(parent, lock.WithHoldScopedToContext())
		require.NoError(t, err)
		cancel()
		<-scoped.Done()
		tokenGone(t, mu, scoped, "its acquiring context ended")
	})
}

// A fixed lease that lapsed ends the hold even before the watchdog's
// goroutine notices (a paused process resumes and asks at once).
func TestFencingTokenEndsWithLapsedLease(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		mu := lock.New(env.Universal, "fence:lapse", lock.WithLeaseTime(100*time.Millisecond))
		held, err := mu.Lock(ctxT(t))
		require.NoError(t, err)
		_, ok := mu.FencingToken(held)
		require.True(t, ok)
		time.Sleep(150 * time.Millisecond)
		tokenGone(t, mu, held, "the lease lapsed")
		require.ErrorIs(t, mu.Unlock(held), lock.ErrLockLost)
	})
}

// Contexts that carry no hold of a lock, or a hold without a token, have
// no token to give.
func TestFencingTokenWithoutHold(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		mu := lock.New(env.Universal, "fence:none")
		var nilCtx context.Context
		tokenGone(t, mu, nilCtx, "no context")
		tokenGone(t, mu, ctx, "no hold")
		var zero lock.Mutex
		_, ok := zero.FencingToken(ctx)
		require.False(t, ok)

		held, err := mu.Lock(ctx)
		require.NoError(t, err)
		defer func() { require.NoError(t, mu.Unlock(held)) }()
		tokenGone(t, mu, lock.NewOwner(held), "NewOwner")
		_, ok = lock.New(env.Universal, "fence:other").FencingToken(held)
		require.False(t, ok, "another lock's token is not this one's")

		// A semaphore's permit carries no fencing token.
		sem := semaphore.New(env.Universal, "fence:sem", 2)
		permit, err := sem.Acquire(held, 1)
		require.NoError(t, err)
		defer func() { require.NoError(t, sem.Release(permit)) }()
		tok, ok := lock.FencingToken(permit)
		require.False(t, ok, "a permit's token (got %d)", tok)
		got, ok := mu.FencingToken(permit)
		require.True(t, ok, "the lock's hold the permit was taken inside")
		want, _ := mu.FencingToken(held)
		require.Equal(t, want, got)
	})
}
