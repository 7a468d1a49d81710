package rwlock_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/testkit/redistest"
	"github.com/relock-go/relock/rwlock"
)

// A hold that has ended, either side, answers no fencing token.
func TestFencingTokenEndsWithHold(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		rw := rwlock.New(env.Universal, "fence:rw")
		gone := func(held context.Context, why string) {
			t.Helper()
			tok, ok := rwlock.FencingToken(held)
			require.False(t, ok, "rwlock.FencingToken after %s (got %d)", why, tok)
			tok, ok = rw.FencingToken(held)
			require.False(t, ok, "RWMutex.FencingToken after %s (got %d)", why, tok)
		}

		w, err := rw.Lock(ctx)
		require.NoError(t, err)
		_, ok := rw.FencingToken(w)
		require.True(t, ok)
		r, err := rw.Downgrade(w)
		require.NoError(t, err)
		gone(w, "Downgrade")
		_, ok = rw.FencingToken(r)
		require.True(t, ok, "the read hold Downgrade returned")
		require.NoError(t, rw.RUnlock(r))
		gone(r, "RUnlock")

		w, err = rw.Lock(ctx)
		require.NoError(t, err)
		require.NoError(t, rw.Unlock(w))
		gone(w, "Unlock")

		var inDo context.Context
		require.NoError(t, rw.RDo(ctx, func(h context.Context) error { inDo = h; return nil }))
		gone(inDo, "RDo returned")
		gone(ctx, "no hold")
		var zero rwlock.RWMutex
		_, ok = zero.FencingToken(ctx)
		require.False(t, ok)
	})
}
