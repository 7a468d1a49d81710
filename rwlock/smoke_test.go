package rwlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/redistest"
	"github.com/relock-go/relock/rwlock"
)

func TestSmoke(t *testing.T) {
	for _, b := range redistest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			env := b.New(t)
			ctx := context.Background()
			rw := rwlock.New(env.Client, "doc")
			r1, err := rw.RLock(ctx)
			require.NoError(t, err)
			r2, err := rw.RLock(ctx)
			require.NoError(t, err, "readers share")
			_, err = rw.TryLock(ctx)
			require.ErrorIs(t, err, rwlock.ErrNotAcquired)
			_, err = rw.Lock(r1)
			require.ErrorIs(t, err, rwlock.ErrUpgradeNotSupported)
			got := make(chan error)
			go func() {
				w, err := rw.Lock(ctx)
				if err == nil {
					err = rw.Unlock(w)
				}
				got <- err
			}()
			time.Sleep(100 * time.Millisecond)
			_, err = rw.TryRLock(ctx)
			require.ErrorIs(t, err, rwlock.ErrNotAcquired, "a waiting writer blocks new readers")
			r3, err := rw.RLock(r1)
			require.NoError(t, err, "but not re-entries")
			require.NoError(t, rw.RUnlock(r3))
			require.NoError(t, rw.RUnlock(r1))
			require.NoError(t, rw.RUnlock(r2))
			require.NoError(t, <-got)
			w, err := rw.Lock(ctx)
			require.NoError(t, err)
			r, err := rw.RLock(w)
			require.NoError(t, err, "writer may read")
			require.NoError(t, rw.RUnlock(r))
			d, err := rw.Downgrade(w)
			require.NoError(t, err)
			r4, err := rw.TryRLock(ctx)
			require.NoError(t, err, "after downgrade readers share")
			require.NoError(t, rw.RUnlock(r4))
			require.ErrorIs(t, rw.Unlock(w), rwlock.ErrNotHeld)
			require.NoError(t, rw.RUnlock(d))
			n, _ := env.Client.Exists(ctx, "doc").Result()
			require.Zero(t, n)
			t.Log(env.Client.Keys(ctx, "*").Val())
		})
	}
}
