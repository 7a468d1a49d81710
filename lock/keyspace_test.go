package lock_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/scripts"
	"github.com/relock-go/relock/internal/testkit/redistest"
	"github.com/relock-go/relock/lock"
)

// TestKeyspaceBounded locks and unlocks many distinct names, as a service
// that locks per entity does (fresh, re-entered, contended, force
// unlocked): what is left is fencing counters and unlock latches, each
// with a TTL no longer than the counter's.
func TestKeyspaceBounded(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		const names = 300
		for i := range names {
			mu := lock.New(env.Universal, fmt.Sprintf("order:%d", i))
			held, err := mu.Lock(ctx)
			require.NoError(t, err)
			switch i % 4 {
			case 1: // re-entered: the inner release writes a latch
				inner, err := mu.Lock(held)
				require.NoError(t, err)
				require.NoError(t, mu.Unlock(inner))
			case 2: // contended: a waiter gets it handed over
				var wg sync.WaitGroup
				wg.Add(1)
				go func() {
					defer wg.Done()
					h, err := mu.Lock(ctx)
					if err == nil {
						err = mu.Unlock(h)
					}
					if err != nil {
						t.Error(err)
					}
				}()
				require.Eventually(t, func() bool { return waiting(env, mu.Name()) }, 5*time.Second, time.Millisecond)
				require.NoError(t, mu.Unlock(held))
				wg.Wait()
				continue
			case 3:
				ok, err := mu.ForceUnlock(ctx)
				require.NoError(t, err)
				require.True(t, ok)
				require.ErrorIs(t, mu.Unlock(held), lock.ErrLockLost)
				continue
			}
			require.NoError(t, mu.Unlock(held))
		}
		left := redistest.RequireBoundedKeyspace(t, ctx, env.Universal, scripts.FenceTTL)
		counters := 0
		for _, k := range left {
			switch {
			case strings.HasPrefix(k.Key, "redisson_lock_token:"):
				counters++
			case strings.HasPrefix(k.Key, "redisson_unlock_latch:"), strings.HasPrefix(k.Key, "relock_acquire_latch:"):
			default:
				t.Errorf("key %s (ttl %v) left after every hold ended", k.Key, k.TTL)
			}
		}
		require.Equal(t, names, counters, "one fencing counter per name")
	})
}

// waiting reports whether a goroutine of this process waits in the
// acquire loop for name (it has subscribed to its channel).
func waiting(env *redistest.Env, name string) bool {
	n, err := env.Subscribers(context.Background(), "redisson_lock__channel:{"+name+"}")
	return err == nil && n > 0
}

// TestFencingTokensSurviveCounterLoss: tokens strictly increase across a
// deleted counter, a FLUSHALL and (on a real server) a restart without
// persistence, and a raw INCR after the last token (Redisson
// RFencedLock's) still returns a larger one.
func TestFencingTokensSurviveCounterLoss(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		const name = "ledger"
		counter := tokenKeyOf(name)
		mu := lock.New(env.Universal, name)
		var last int64
		draw := func(what string) {
			t.Helper()
			held, err := mu.Lock(ctx)
			require.NoError(t, err, what)
			tok, ok := lock.FencingToken(held)
			require.True(t, ok)
			require.Greater(t, tok, last, "token after %s", what)
			last = tok
			inner, err := mu.Lock(held) // re-entry draws one too
			require.NoError(t, err)
			tok, _ = lock.FencingToken(inner)
			require.Greater(t, tok, last, "re-entry after %s", what)
			last = tok
			require.NoError(t, mu.Unlock(inner))
			require.NoError(t, mu.Unlock(held))
			ttl := env.Universal.PTTL(ctx, counter).Val()
			require.Positive(t, ttl, "the counter has a TTL")
			require.LessOrEqual(t, ttl, scripts.FenceTTL)
			require.Equal(t, last, mustInt64(t, env.Universal.Get(ctx, counter)))
		}
		// A counter that an older version or RFencedLock left small.
		require.NoError(t, env.Universal.Set(ctx, counter, 42, 0).Err())
		draw("a small counter")
		for range 50 {
			draw("a quick succession")
		}
		require.NoError(t, env.Universal.Del(ctx, counter).Err())
		draw("DEL of the counter")
		require.NoError(t, env.Universal.FlushAll(ctx).Err())
		draw("FLUSHALL")
		if env.Has(redistest.ProcessControl) {
			env.Server.Restart(t)
			require.Eventually(t, func() bool { return env.Universal.Ping(ctx).Err() == nil }, 5*time.Second, 10*time.Millisecond)
			require.Zero(t, env.Universal.Exists(ctx, counter).Val(), "the restart forgot the counter")
			draw("a restart without persistence")
		}
		incr, err := env.Universal.Incr(ctx, counter).Result()
		require.NoError(t, err)
		require.Greater(t, incr, last, "RFencedLock's INCR after our last token")
		last = incr
		draw("RFencedLock's INCR")
	})
}
