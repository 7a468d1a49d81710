package rwlock_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/scripts"
	"github.com/relock-go/relock/internal/testkit/redistest"
	"github.com/relock-go/relock/rwlock"
)

// TestKeyspaceBounded takes and releases read and write holds of many
// distinct names (re-entered, downgraded, with a writer that gave up
// waiting): what is left is fencing counters and unlock latches, each with
// a TTL no longer than the counter's.
func TestKeyspaceBounded(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		const names = 200
		for i := range names {
			rw := rwlock.New(env.Universal, fmt.Sprintf("catalog:%d", i))
			switch i % 4 {
			case 0: // read, re-entered
				r, err := rw.RLock(ctx)
				require.NoError(t, err)
				inner, err := rw.RLock(r)
				require.NoError(t, err)
				require.NoError(t, rw.RUnlock(inner))
				require.NoError(t, rw.RUnlock(r))
			case 1: // write, re-entered
				w, err := rw.Lock(ctx)
				require.NoError(t, err)
				inner, err := rw.Lock(w)
				require.NoError(t, err)
				require.NoError(t, rw.Unlock(inner))
				require.NoError(t, rw.Unlock(w))
			case 2: // write, downgraded
				w, err := rw.Lock(ctx)
				require.NoError(t, err)
				r, err := rw.Downgrade(w)
				require.NoError(t, err)
				require.NoError(t, rw.RUnlock(r))
			case 3: // a writer that waited for a reader and gave up
				r, err := rw.RLock(ctx)
				require.NoError(t, err)
				_, err = rwlock.New(env.Universal, rw.Name(), rwlock.WithWaitTimeout(20*time.Millisecond)).Lock(ctx)
				require.ErrorIs(t, err, rwlock.ErrNotAcquired)
				require.NoError(t, rw.RUnlock(r))
			}
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

// TestFencingTokensSurviveCounterLoss: read and write tokens strictly
// increase across a deleted counter and a FLUSHALL.
func TestFencingTokensSurviveCounterLoss(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		rw := rwlock.New(env.Universal, "catalog")
		var last int64
		draw := func(what string) {
			t.Helper()
			w, err := rw.Lock(ctx)
			require.NoError(t, err)
			tok, _ := rwlock.FencingToken(w)
			require.Greater(t, tok, last, "write token after %s", what)
			r, err := rw.Downgrade(w)
			require.NoError(t, err)
			tok2, _ := rwlock.FencingToken(r)
			require.Greater(t, tok2, tok, "downgrade after %s", what)
			require.NoError(t, rw.RUnlock(r))
			r, err = rw.RLock(ctx)
			require.NoError(t, err)
			last, _ = rwlock.FencingToken(r)
			require.Greater(t, last, tok2, "read token after %s", what)
			require.NoError(t, rw.RUnlock(r))
			ttl := env.Universal.PTTL(ctx, tokenKey("catalog")).Val()
			require.Positive(t, ttl)
			require.LessOrEqual(t, ttl, scripts.FenceTTL)
		}
		draw("the first acquisition")
		require.NoError(t, env.Universal.Del(ctx, tokenKey("catalog")).Err())
		draw("DEL of the counter")
		require.NoError(t, env.Universal.FlushAll(ctx).Err())
		draw("FLUSHALL")
		incr, err := env.Universal.Incr(ctx, tokenKey("catalog")).Result()
		require.NoError(t, err)
		require.Greater(t, incr, last, "RFencedLock's INCR after our last token")
	})
}
