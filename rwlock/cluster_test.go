package rwlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/testkit/redistest"
	"github.com/relock-go/relock/rwlock"
)

// TestClusterHashTagNames: on the shared cluster, with plain names and
// names that hold a hash tag, the lock hash, the readers' timeout keys, the
// waiting writers' set, the token counter and the channel share one slot
// (a script touching two slots fails with CROSSSLOT), and the lock works:
// readers share, a writer waits for them and wakes on SPUBLISH.
func TestClusterHashTagNames(t *testing.T) {
	for _, name := range []string{"orders:7", "{user:1}:orders", "a{b}c"} {
		t.Run(name, func(t *testing.T) {
			env := redistest.ClusterBackend().New(t)
			cc := env.Universal.(*redis.ClusterClient)
			ctx := ctxT(t)
			rw := rwlock.New(cc, name)
			r1, err := rw.RLock(as(ctx, "r1"))
			require.NoError(t, err)
			r2, err := rw.RLock(as(ctx, "r2"))
			require.NoError(t, err)

			writer := rwlock.New(otherClient(t, env), name)
			wait := goAcquire(func() (context.Context, error) { return writer.Lock(as(ctx, "w")) })
			require.Eventually(t, func() bool {
				_, chs, err := redistest.Slots(ctx, cc)
				return err == nil && len(chs) == 1
			}, settle, poll, "the writer subscribed")
			requireWaiting(t, wait, "writer while two readers hold")
			redistest.RequireOneSlot(t, ctx, cc, name, name, "rwlock_timeout", "rwlock_write_waiters", "redisson_lock_token")

			require.NoError(t, rw.RUnlock(r1))
			requireWaiting(t, wait, "writer while one reader holds")
			require.NoError(t, rw.RUnlock(r2))
			got := await(t, wait, 10*time.Second, "writer after the readers left")
			require.NoError(t, got.err)
			_, err = rw.TryRLock(as(ctx, "r3"))
			require.ErrorIs(t, err, rwlock.ErrNotAcquired)
			r, err := writer.Downgrade(got.ctx)
			require.NoError(t, err)
			require.NoError(t, writer.RUnlock(r))
			onlyBookkeepingLeft(t, cc, name)
			ks, _, err := redistest.Slots(ctx, cc)
			require.NoError(t, err)
			slot := cc.ClusterKeySlot(ctx, name).Val()
			for k, s := range ks {
				require.Equal(t, slot, s, "key %q left", k)
			}
		})
	}
}
