package lock_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/scripts"
	"github.com/relock-go/relock/internal/testkit/redistest"
	"github.com/relock-go/relock/lock"
	"github.com/relock-go/relock/watchdog"
)

// TestCluster runs the lock on the shared 3-master Redis Cluster: every
// script touches one slot, waiters wake on SPUBLISH through sharded pub/sub,
// and the watchdog renews leases spread over the masters.
func TestCluster(t *testing.T) {
	env := redistest.ClusterBackend().New(t)
	cc := env.Universal.(*redis.ClusterClient)
	ctx := ctxT(t)

	t.Run("ReentrantAndFenced", func(t *testing.T) {
		mu := lock.New(cc, "order:1")
		held, err := mu.Lock(ctx)
		require.NoError(t, err)
		inner, err := mu.Lock(held)
		require.NoError(t, err)
		n, err := mu.HoldCount(inner)
		require.NoError(t, err)
		require.Equal(t, 2, n)
		tok, _ := lock.FencingToken(inner)
		v, err := cc.Get(ctx, "redisson_lock_token:{order:1}").Int64()
		require.NoError(t, err)
		require.Equal(t, tok, v)
		require.NoError(t, mu.Unlock(inner))
		require.NoError(t, mu.Unlock(held))
	})

	t.Run("WaiterWakesOnShardedMessage", func(t *testing.T) {
		// The holder is another "process": its own cluster client.
		other := env.NewClient(t)
		for i := range 3 { // names spread over the masters
			name := fmt.Sprintf("shard:%d", i)
			held, err := lock.New(other, name).Lock(ctx)
			require.NoError(t, err)
			got := make(chan time.Duration, 1)
			go func() {
				start := time.Now()
				m := lock.New(cc, name)
				h, err := m.Lock(ctx)
				if err != nil {
					t.Error(err)
					got <- 0
					return
				}
				got <- time.Since(start)
				_ = m.Unlock(h)
			}()
			ch := "redisson_lock__channel:{" + name + "}"
			require.Eventually(t, func() bool {
				res, err := cc.PubSubShardNumSub(ctx, ch).Result()
				return err == nil && res[ch] == 1
			}, 10*time.Second, 5*time.Millisecond, "the waiter subscribed with SSUBSCRIBE")
			require.NoError(t, lock.New(other, name).Unlock(held))
			select {
			case d := <-got:
				require.Less(t, d, 10*time.Second, "woke on the message, not the 30 s lease")
			case <-time.After(10 * time.Second):
				t.Fatal("waiter did not wake on SPUBLISH")
			}
		}
	})

	t.Run("WatchdogAcrossMasters", func(t *testing.T) {
		wd := watchdog.New()
		var helds []context.Context
		var mus []*lock.Mutex
		for i := range 12 {
			mu := lock.New(cc, fmt.Sprintf("wd:%d", i), lock.WithWatchdog(wd), lock.WithWatchdogTimeout(300*time.Millisecond))
			held, err := mu.Lock(ctx)
			require.NoError(t, err)
			helds, mus = append(helds, held), append(mus, mu)
		}
		time.Sleep(time.Second) // > 3 leases
		for i, mu := range mus {
			require.NoError(t, helds[i].Err())
			locked, err := mu.IsLocked(ctx)
			require.NoError(t, err)
			require.True(t, locked)
			require.NoError(t, mu.Unlock(helds[i]))
		}
		require.Zero(t, wd.Stats().Lost)
	})

	t.Run("Contention", func(t *testing.T) {
		var inside, overlaps, done atomic.Int32
		var wg sync.WaitGroup
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				m := lock.New(cc, "{hot}")
				for range 20 {
					h, err := m.Lock(ctx)
					if err != nil {
						t.Error(err)
						return
					}
					if inside.Add(1) != 1 {
						overlaps.Add(1)
					}
					time.Sleep(50 * time.Microsecond)
					inside.Add(-1)
					done.Add(1)
					_ = m.Unlock(h)
				}
			}()
		}
		wg.Wait()
		require.Zero(t, overlaps.Load())
		require.EqualValues(t, 160, done.Load())
	})
}

// hashTagNames are lock names for the cluster: a plain one, one that is a
// hash tag followed by more, and one with a tag inside. With a tag the
// name's own tag decides the slot of every key (Redisson's prefixName).
var hashTagNames = []string{"orders:7", "{user:1}:orders", "a{b}c"}

// TestClusterHashTagNames: with names that hold a hash tag, the lock hash,
// the token counter, the unlock latch and the channel share one slot, and
// the lock works: exclusion, re-entry, tokens, a waiter woken by SPUBLISH.
func TestClusterHashTagNames(t *testing.T) {
	for _, name := range hashTagNames {
		t.Run(name, func(t *testing.T) {
			env := redistest.ClusterBackend().New(t)
			cc := env.Universal.(*redis.ClusterClient)
			ctx := ctxT(t)
			mu := lock.New(cc, name)
			held, err := mu.Lock(ctx)
			require.NoError(t, err)
			inner, err := mu.Lock(held)
			require.NoError(t, err)
			_, err = mu.TryLock(ctx)
			require.ErrorIs(t, err, lock.ErrNotAcquired)

			// Another process waits: its channel must be on the lock's shard.
			other := lock.New(env.NewClient(t), name)
			got := make(chan error, 1)
			go func() {
				h, err := other.Lock(ctx)
				if err == nil {
					err = other.Unlock(h)
				}
				got <- err
			}()
			require.Eventually(t, func() bool {
				_, chs, err := redistest.Slots(ctx, cc)
				return err == nil && len(chs) == 1
			}, 10*time.Second, 5*time.Millisecond, "the waiter subscribed")
			token := scripts.Prefix("redisson_lock_token", name)
			redistest.RequireOneSlot(t, ctx, cc, name, name, token)

			tok, ok := lock.FencingToken(inner)
			require.True(t, ok)
			v, err := cc.Get(ctx, token).Int64()
			require.NoError(t, err)
			require.Equal(t, tok, v)
			require.NoError(t, mu.Unlock(inner))
			require.NoError(t, mu.Unlock(held))
			select {
			case err := <-got:
				require.NoError(t, err)
			case <-time.After(10 * time.Second):
				t.Fatal("waiter not woken by the unlock")
			}
			// The unlock latches and anything else left are in the slot too.
			ks, _, err := redistest.Slots(ctx, cc)
			require.NoError(t, err)
			slot, _ := cc.ClusterKeySlot(ctx, name).Result()
			for k, s := range ks {
				require.Equal(t, slot, s, "key %q", k)
			}
			locked, err := mu.IsLocked(ctx)
			require.NoError(t, err)
			require.False(t, locked)
		})
	}
}
