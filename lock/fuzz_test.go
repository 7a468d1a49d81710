package lock_test

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/core"
	"github.com/relock-go/relock/internal/core/optionstest"
	"github.com/relock-go/relock/internal/scripts"
	"github.com/relock-go/relock/internal/testkit/redistest"
	"github.com/relock-go/relock/lock"
)

// The fuzzers' option mask and option sets, shared by the primitives'
// fuzz tests (optionstest).
const (
	fuzzOptLease    = optionstest.Lease
	fuzzOptWatchdog = optionstest.Watchdog
	fuzzOptWait     = optionstest.Wait
	fuzzOptUnlock   = optionstest.Unlock
)

var (
	fuzzOptions   = optionstest.Fuzz
	fuzzMayBeLost = optionstest.MayBeLost
)

func fuzzKeys(t *testing.T, c redis.UniversalClient) []string {
	t.Helper()
	ks, err := c.Keys(context.Background(), "*").Result()
	require.NoError(t, err)
	return ks
}

// FuzzLock: whatever the name and the options, Lock never panics; it
// either refuses with ErrInvalidArgument, writing nothing, or yields a
// hold that is visible, re-enters, releases and leaves only the fencing
// counter (and an unlock latch after a re-entry) behind.
func FuzzLock(f *testing.F) {
	_, client := redistest.Miniredis(f)
	const maxI, minI = int64(math.MaxInt64), int64(math.MinInt64)
	sec := int64(time.Second)
	for _, name := range []string{
		"order:1", "", "ключ:🔒", "{", "}", "{{a}", "a{b}c", "{a{b}c}", "}{", "{}", "x\x00y", "\x00",
		strings.Repeat("long", 16<<10), "redisson_lock_token:{x}",
	} {
		f.Add(name, uint8(0), int64(0), int64(0), int64(0), int64(0), false, false)
		f.Add(name, uint8(fuzzOptLease|fuzzOptUnlock), 10*sec, int64(0), int64(0), sec, true, true)
	}
	for _, d := range []int64{-1, 0, 1, int64(core.MinLease) - 1, int64(core.MinLease), sec, maxI, minI, maxI / 2} {
		f.Add("o", uint8(fuzzOptLease), d, d, d, d, true, false)
		f.Add("o", uint8(fuzzOptWatchdog), d, d, d, d, false, true)
		f.Add("o", uint8(fuzzOptWait|fuzzOptUnlock), d, d, d, d, true, true)
		f.Add("o", uint8(fuzzOptUnlock), d, d, d, d, false, true)
		f.Add("o", uint8(0xff), d, d, d, d, true, false)
	}

	f.Fuzz(func(t *testing.T, name string, mask uint8, lease, wdt, wait, unlock int64, useLock, reenter bool) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		require.NoError(t, client.FlushAll(ctx).Err())
		opts, valid, effective := fuzzOptions(mask, lease, wdt, wait, unlock)
		valid = valid && name != "" && scripts.CheckName(name) == ""
		mu := lock.New(client, name, lock.Options(opts)...)
		acquire := mu.TryLock
		if useLock {
			acquire = mu.Lock
		}
		start := time.Now()
		// However short the wait bound, the first attempt is made: a free
		// lock is taken (and a re-entry below succeeds).
		held, err := acquire(ctx)
		if !valid {
			require.ErrorIs(t, err, lock.ErrInvalidArgument)
			require.Nil(t, held)
			_, err = mu.IsLocked(ctx)
			require.ErrorIs(t, err, lock.ErrInvalidArgument)
			_, err = mu.ForceUnlock(ctx)
			require.ErrorIs(t, err, lock.ErrInvalidArgument)
			require.ErrorIs(t, mu.Unlock(ctx), lock.ErrInvalidArgument)
			require.Empty(t, fuzzKeys(t, client), "nothing may be written on invalid input")
			return
		}
		require.NoError(t, err)
		tok, ok := lock.FencingToken(held)
		require.True(t, ok)
		require.Positive(t, tok)
		locked, err := mu.IsLocked(ctx)
		require.NoError(t, err)
		require.True(t, locked)
		n, err := mu.HoldCount(held)
		require.NoError(t, err)
		require.Equal(t, 1, n)
		ttl, err := mu.TTL(ctx)
		require.NoError(t, err)
		require.Positive(t, ttl)
		require.LessOrEqual(t, ttl, effective)

		if reenter {
			inner, err := lock.New(client, name, lock.Options(opts)...).Lock(held)
			require.NoError(t, err)
			tok2, _ := lock.FencingToken(inner)
			require.Greater(t, tok2, tok, "re-entry draws a larger token")
			n, err = mu.HoldCount(inner)
			require.NoError(t, err)
			require.Equal(t, 2, n)
			if err := mu.Unlock(inner); err != nil {
				require.True(t, fuzzMayBeLost(err, start, effective), "inner unlock: %v", err)
				return
			}
		}
		if err := mu.Unlock(held); err != nil {
			require.True(t, fuzzMayBeLost(err, start, effective), "unlock: %v", err)
			return
		}
		locked, err = mu.IsLocked(ctx)
		require.NoError(t, err)
		require.False(t, locked)
		for _, k := range fuzzKeys(t, client) {
			if k != scripts.Prefix("redisson_lock_token", name) && !strings.HasPrefix(k, scripts.Prefix("redisson_unlock_latch", name)+":") && !strings.HasPrefix(k, scripts.Prefix("relock_acquire_latch", name)+":") {
				t.Fatalf("key %q left after the hold was released", k)
			}
		}
	})
}
