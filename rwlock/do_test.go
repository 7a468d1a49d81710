package rwlock_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/testkit/redistest"
	"github.com/relock-go/relock/rwlock"
)

// Do and RDo release on every path, a panic included; readers share.
func TestDoAndRDo(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		rw := rwlock.New(env.Universal, "do")
		errWork := errors.New("work failed")
		err := rw.RDo(ctx, func(held context.Context) error {
			require.Equal(t, "read", mode(t, env.Universal, "do"))
			return rw.RDo(ctx, func(context.Context) error { return errWork }) // another reader shares
		})
		require.ErrorIs(t, err, errWork)
		require.False(t, exists(t, env.Universal, "do"))

		require.Panics(t, func() {
			_ = rw.Do(ctx, func(held context.Context) error {
				require.Equal(t, "write", mode(t, env.Universal, "do"))
				_, err := rw.TryRLock(ctx)
				require.ErrorIs(t, err, rwlock.ErrNotAcquired, "the writer excludes readers")
				panic("boom")
			})
		})
		require.False(t, exists(t, env.Universal, "do"), "released after a panic")
		onlyBookkeepingLeft(t, env.Universal, "do")
	})
}

// Unlock through a read hold's context taken inside the write hold is
// out of order: refused (it would release the write hold under the
// reader), and nothing changes in Redis.
func TestUnlockThroughInnerReadHoldRefused(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		rw := rwlock.New(env.Universal, "order")
		w, err := rw.Lock(ctx)
		require.NoError(t, err)
		r, err := rw.RLock(w)
		require.NoError(t, err)
		err = rw.Unlock(r)
		require.ErrorIs(t, err, rwlock.ErrNotHeld)
		require.ErrorContains(t, err, "RUnlock it")
		require.Equal(t, "write", mode(t, env.Universal, "order"))
		require.ErrorIs(t, rw.RUnlock(w), rwlock.ErrNotHeld, "and a write context is no read hold")
		require.NoError(t, rw.RUnlock(r))
		require.NoError(t, rw.Unlock(w))
		require.False(t, exists(t, env.Universal, "order"))
		onlyBookkeepingLeft(t, env.Universal, "order")
	})
}
