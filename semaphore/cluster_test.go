package semaphore_test

import (
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/testkit/redistest"
	"github.com/relock-go/relock/semaphore"
)

// TestClusterHashTagNames: on the shared cluster, with plain names and
// names that hold a hash tag, the permits, weights, waiters and waiter
// marks and the channel share one slot (a script touching two slots fails
// with CROSSSLOT), and the semaphore works: a waiter of another process
// wakes on SPUBLISH when permits come back.
func TestClusterHashTagNames(t *testing.T) {
	for _, name := range []string{"orders:7", "{user:1}:orders", "a{b}c"} {
		t.Run(name, func(t *testing.T) {
			env := redistest.ClusterBackend().New(t)
			cc := env.Universal.(*redis.ClusterClient)
			ctx := ctxT(t)
			s := semaphore.New(cc, name, 3)
			a, err := s.Acquire(ctx, 2)
			require.NoError(t, err)
			b, err := s.Acquire(ctx, 1)
			require.NoError(t, err)
			require.EqualValues(t, 0, available(t, s))

			waiter := semaphore.New(env.NewClient(t), name, 3)
			ch := acquireAsync(waiter, ctx, 2)
			require.Eventually(t, func() bool {
				_, chs, err := redistest.Slots(ctx, cc)
				return err == nil && len(chs) == 1
			}, 10*time.Second, 5*time.Millisecond, "the waiter subscribed")
			requireNotYet(t, ch, "waiter while every permit is held")
			// The subscription shows before the head's try that marks it.
			require.Eventually(t, func() bool {
				ks, _, err := redistest.Slots(ctx, cc)
				for k := range ks {
					if err == nil && strings.Contains(k, "waiters") {
						return true
					}
				}
				return false
			}, 10*time.Second, 5*time.Millisecond, "the waiter marked itself")
			redistest.RequireOneSlot(t, ctx, cc, name, "permits", "waiters")

			require.NoError(t, s.Release(b))
			requireNotYet(t, ch, "waiter for 2 with 1 permit free")
			require.NoError(t, s.Release(a))
			r := waitResult(t, ch, 10*time.Second, "waiter after the release")
			require.NoError(t, r.err)
			require.EqualValues(t, 1, available(t, s))
			require.NoError(t, waiter.Release(r.ctx))
			require.EqualValues(t, 3, available(t, s))
			ks, _, err := redistest.Slots(ctx, cc)
			require.NoError(t, err)
			slot := cc.ClusterKeySlot(ctx, name).Val()
			for k, sl := range ks {
				require.Equal(t, slot, sl, "key %q left", k)
			}
		})
	}
}
