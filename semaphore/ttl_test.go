package semaphore_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/scripts"
	"github.com/relock-go/relock/internal/testkit/redistest"
	"github.com/relock-go/relock/semaphore"
	"github.com/relock-go/relock/watchdog"
)

// The scripts leave the keys' TTLs alone while they cover the last permit
// and mark (state.lua, settle); these tests put the keys in the states
// where that would be wrong.

// serverMillis is the server's TIME in ms (miniredis's pinned one).
func serverMillis(t *testing.T, ctx context.Context, c redis.UniversalClient) int64 {
	t.Helper()
	now, err := c.Time(ctx).Result()
	require.NoError(t, err)
	return now.UnixMilli()
}

// keyEnds returns when (server ms) the hash, permits and weights keys end,
// each required to have a TTL, and the latest permit's expiry.
func keyEnds(t *testing.T, ctx context.Context, env *env, name string) (ends map[string]int64, latest int64) {
	t.Helper()
	top, err := env.Universal.ZRangeWithScores(ctx, scripts.Permits(name), -1, -1).Result()
	require.NoError(t, err)
	require.Len(t, top, 1)
	now := serverMillis(t, ctx, env.Universal)
	ends = map[string]int64{}
	for _, k := range []string{name, scripts.Permits(name), scripts.Weights(name)} {
		ttl, err := env.Universal.PTTL(ctx, k).Result()
		require.NoError(t, err)
		require.Positive(t, ttl, "%s has a TTL", k)
		ends[k] = now + ttl.Milliseconds()
	}
	return ends, int64(top[0].Score)
}

// requireKeysCoverPermits: the hash, permits and weights keys live at
// least until the latest permit's expiry.
func requireKeysCoverPermits(t *testing.T, ctx context.Context, env *env, name string) {
	t.Helper()
	ends, latest := keyEnds(t, ctx, env, name)
	for k, end := range ends {
		require.GreaterOrEqual(t, end, latest, "%s outlives the latest permit", k)
	}
}

// acquireScript runs the acquire script of s (named name) directly, as a
// try whose reply was lost or a refused one would have run it.
func acquireScript(t *testing.T, ctx context.Context, env *env, s *semaphore.Semaphore, name string, size, n int64, id string, lease time.Duration) []int64 {
	t.Helper()
	ks := []string{name, scripts.Permits(name), scripts.Weights(name), scripts.Waiters(name), scripts.WaiterExpiry(name), s.Channel()}
	got, err := redis.NewScript(semaphore.AcquireScriptSource()).Run(ctx, env.Universal, ks, size, n, id, lease.Milliseconds(), "", "publish", 3000, "").Int64Slice()
	require.NoError(t, err)
	return got
}

// TestKeysFollowAnOlderVersionsTTL: a relock version before the slack set
// the keys to expire exactly with the latest permit; a later acquisition
// must still extend them to its own permit (the real TTL is read, not a
// recorded one).
func TestKeysFollowAnOlderVersionsTTL(t *testing.T) {
	each(t, func(t *testing.T, env *env) {
		ctx := ctxT(t)
		const name = "ttl-mixed"
		still := watchdog.New(watchdog.WithClock(watchdog.NewFakeClock(time.Now())))
		s := semaphore.New(env.Universal, name, 3, semaphore.WithLeaseTime(3*time.Second), semaphore.WithWatchdog(still))
		a, err := s.Acquire(ctx, 1)
		require.NoError(t, err)
		b, err := s.Acquire(ctx, 1)
		require.NoError(t, err)
		// What the older version's settle left: the keys end with B.
		top, err := env.Universal.ZRangeWithScores(ctx, scripts.Permits(name), -1, -1).Result()
		require.NoError(t, err)
		for _, k := range []string{name, scripts.Permits(name), scripts.Weights(name)} {
			require.NoError(t, env.Universal.PExpireAt(ctx, k, time.UnixMilli(int64(top[0].Score))).Err())
		}
		env.advance(20 * time.Millisecond)
		require.NoError(t, s.Release(a))
		c, err := s.Acquire(ctx, 1)
		require.NoError(t, err)
		requireKeysCoverPermits(t, ctx, env, name)
		require.NoError(t, s.Release(b))
		require.NoError(t, s.Release(c))
	})
}

// TestWeightsMadeAnewGetATTL: the weights hash gone while permits live
// (evicted, or deleted by hand) is written anew by the next acquisition,
// with a TTL.
func TestWeightsMadeAnewGetATTL(t *testing.T) {
	each(t, func(t *testing.T, env *env) {
		ctx := ctxT(t)
		const name = "ttl-weights"
		s := semaphore.New(env.Universal, name, 3)
		a, err := s.Acquire(ctx, 1)
		require.NoError(t, err)
		require.NoError(t, env.Universal.Del(ctx, scripts.Weights(name)).Err())
		b, err := s.Acquire(ctx, 1)
		require.NoError(t, err)
		redistest.RequireBoundedKeyspace(t, ctx, env.Universal, time.Minute)
		requireKeysCoverPermits(t, ctx, env, name)
		require.NoError(t, s.Release(a))
		require.NoError(t, s.Release(b))
	})
}

// TestBoundKeptWhenTheHashIsLost: the hash that sums the permits in use,
// evicted or deleted while permits live, is recounted from them, so the
// bound holds; a permit whose weight is lost too counts as the whole
// semaphore until it ends.
func TestBoundKeptWhenTheHashIsLost(t *testing.T) {
	each(t, func(t *testing.T, env *env) {
		ctx := ctxT(t)
		const name = "lost-hash"
		s := semaphore.New(env.Universal, name, 5)
		a, err := s.Acquire(ctx, 3)
		require.NoError(t, err)
		b, err := s.Acquire(ctx, 2)
		require.NoError(t, err)
		require.NoError(t, env.Universal.Del(ctx, name).Err())
		_, err = s.TryAcquire(ctx, 1)
		require.ErrorIs(t, err, semaphore.ErrNotAcquired, "5 of 5 permits are held")
		require.NoError(t, s.Release(b))
		c, err := s.TryAcquire(ctx, 2)
		require.NoError(t, err, "2 of 5 are free")

		require.NoError(t, env.Universal.Del(ctx, name, scripts.Weights(name)).Err())
		_, err = s.TryAcquire(ctx, 1)
		require.ErrorIs(t, err, semaphore.ErrNotAcquired, "permits of unknown weight live")
		require.NoError(t, s.Release(a))
		require.NoError(t, s.Release(c))
		d, err := s.TryAcquire(ctx, 5)
		require.NoError(t, err, "every permit is free again")
		require.NoError(t, s.Release(d))
		redistest.RequireBoundedKeyspace(t, ctx, env.Universal, time.Minute)
	})
}

// TestAcquireRunAgainCountsWhatLapsed: an acquisition's script run a
// second time (its first reply lost) finds its permit; what lapsed in
// between and was purged on the way is counted free, not kept in used.
func TestAcquireRunAgainCountsWhatLapsed(t *testing.T) {
	each(t, func(t *testing.T, env *env) {
		ctx := ctxT(t)
		const name = "ttl-rerun"
		s := semaphore.New(env.Universal, name, 4)
		run := func(id string, lease time.Duration) {
			t.Helper()
			require.EqualValues(t, 1, acquireScript(t, ctx, env, s, name, 4, 2, id, lease)[0], "%s acquired", id)
		}
		run("lapses", 100*time.Millisecond)
		run("stays", time.Minute)
		env.advance(150 * time.Millisecond)
		run("stays", time.Minute) // found: its first reply was lost
		n, err := s.Available(ctx)
		require.NoError(t, err)
		require.EqualValues(t, 2, n, "the lapsed permit's 2 are free")
	})
}

// scriptClocks bounds how far past the end a script computes from its
// TIME (floored to ms) a relative PEXPIRE run later in it may set a key's.
const scriptClocks = 20

// TestKeysShrinkAfterARenewedPermitGoes: a renewal moves the keys' end to
// its permit's new expiry; when that permit is released, the keys come
// back to the remaining permit's expiry (plus the slack), not the renewed
// one's.
func TestKeysShrinkAfterARenewedPermitGoes(t *testing.T) {
	each(t, func(t *testing.T, env *env) {
		ctx := ctxT(t)
		const name = "ttl-renewed"
		still := watchdog.New(watchdog.WithClock(watchdog.NewFakeClock(time.Now())))
		s := semaphore.New(env.Universal, name, 3, semaphore.WithLeaseTime(3*time.Second), semaphore.WithWatchdog(still))
		a, err := s.Acquire(ctx, 1)
		require.NoError(t, err)
		b, err := s.Acquire(ctx, 1)
		require.NoError(t, err)
		env.advance(1500 * time.Millisecond)
		require.NoError(t, s.Extend(a, 3*time.Second))
		require.NoError(t, s.Release(a))
		requireKeysCoverPermits(t, ctx, env, name)
		ends, latest := keyEnds(t, ctx, env, name)
		for k, end := range ends {
			// The renewed permit ended 1.5 s later; the keys come back to
			// the last permit's end plus the slack, and the time the
			// release script ran between its TIME and its PEXPIREs, which
			// count from when they run (a few ms on a loaded machine).
			require.LessOrEqual(t, end, latest+semaphore.KeySlack.Milliseconds()+scriptClocks,
				"%s outlives the last permit by the slack at most", k)
		}
		require.NoError(t, s.Release(b))
	})
}

// TestRefusedAcquisitionWritesNothing: an acquisition of more permits than
// the size (here the script's own check: the client checks n against the
// size it knows, which a Resize may shrink during a wait) writes no key,
// even where no size is recorded yet.
func TestRefusedAcquisitionWritesNothing(t *testing.T) {
	each(t, func(t *testing.T, env *env) {
		ctx := ctxT(t)
		const name = "ttl-refused"
		s := semaphore.New(env.Universal, name, 2)
		require.Equal(t, []int64{-3, 2}, acquireScript(t, ctx, env, s, name, 2, 3, "p", 30*time.Second))
		require.Zero(t, env.Universal.Exists(ctx, name, scripts.Permits(name), scripts.Weights(name), scripts.Waiters(name), scripts.WaiterExpiry(name)).Val(),
			"nothing written")
	})
}

// TestHashLostUnderPermitsKeepsTheBound: the hash was lost (evicted) under
// live permits and written again with used alone, as a release's settle
// does; a try that does not fit must not record the size with used 0,
// which would let more permits in than the size.
func TestHashLostUnderPermitsKeepsTheBound(t *testing.T) {
	each(t, func(t *testing.T, env *env) {
		ctx := ctxT(t)
		s := semaphore.New(env.Universal, "lost-hash", 3)
		held, err := s.Acquire(ctx, 2)
		require.NoError(t, err)
		require.NoError(t, env.Universal.Del(ctx, "lost-hash").Err())
		require.NoError(t, env.Universal.HSet(ctx, "lost-hash", "used", 2).Err())

		_, err = s.TryAcquire(ctx, 2)
		require.ErrorIs(t, err, semaphore.ErrNotAcquired, "1 of 3 free")
		one, err := s.TryAcquire(ctx, 1)
		require.NoError(t, err)
		_, err = s.TryAcquire(ctx, 1)
		require.ErrorIs(t, err, semaphore.ErrNotAcquired, "3 of 3 held")
		require.EqualValues(t, 0, available(t, s))
		require.NoError(t, s.Release(one))
		require.NoError(t, s.Release(held))
	})
}
