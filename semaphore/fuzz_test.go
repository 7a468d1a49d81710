package semaphore_test

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
	"github.com/relock-go/relock/semaphore"
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

// fuzzExactSize: Lua numbers are doubles, so the scripts hold a size
// exactly only up to 2^53; a larger size is bad input.
const fuzzExactSize = semaphore.MaxSize

func fuzzKeys(t *testing.T, c redis.UniversalClient) []string {
	t.Helper()
	ks, err := c.Keys(context.Background(), "*").Result()
	require.NoError(t, err)
	return ks
}

// FuzzSemaphore: whatever the name, size, count and options, the
// semaphore never panics; it either refuses with ErrInvalidArgument,
// writing nothing, or yields n permits that show in Available, are given
// back by Release and leave only the size record (used 0) and the unlock
// latch behind.
func FuzzSemaphore(f *testing.F) {
	_, client := redistest.Miniredis(f)
	const maxI, minI = int64(math.MaxInt64), int64(math.MinInt64)
	sec := int64(time.Second)
	for _, name := range []string{
		"exports", "", "экспорт:📦", "{", "}", "{{a}", "a{b}c", "{a{b}c}", "}{", "{}", "x\x00y", "\x00",
		strings.Repeat("long", 16<<10), "{exports}:permits",
	} {
		f.Add(name, int64(4), int64(2), uint8(0), int64(0), int64(0), int64(0), int64(0), false)
		f.Add(name, int64(1), int64(1), uint8(fuzzOptLease|fuzzOptUnlock), 10*sec, int64(0), int64(0), sec, true)
	}
	for _, sz := range [][2]int64{
		{0, 0}, {0, 1}, {-1, 1}, {1, 0}, {1, -1}, {1, 2}, {3, 4}, {3, 3}, {minI, minI}, {maxI, 1}, {1, maxI},
		{maxI, maxI}, {fuzzExactSize, fuzzExactSize}, {1e14, 1}, {1e15 + 1, 1e15}, {fuzzExactSize, 2},
	} {
		f.Add("s", sz[0], sz[1], uint8(0), int64(0), int64(0), int64(0), int64(0), true)
		f.Add("s", sz[0], sz[1], uint8(0), int64(0), int64(0), int64(0), int64(0), false)
	}
	for _, d := range []int64{-1, 0, 1, int64(core.MinLease) - 1, int64(core.MinLease), sec, maxI, minI, maxI / 2} {
		f.Add("s", int64(2), int64(1), uint8(fuzzOptLease), d, d, d, d, false)
		f.Add("s", int64(2), int64(2), uint8(fuzzOptWatchdog), d, d, d, d, true)
		f.Add("s", int64(2), int64(1), uint8(fuzzOptWait), d, d, d, d, true)
		f.Add("s", int64(2), int64(1), uint8(0xff), d, d, d, d, false)
	}

	f.Fuzz(func(t *testing.T, name string, size, n int64, mask uint8, lease, wdt, wait, unlock int64, useAcquire bool) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		require.NoError(t, client.FlushAll(ctx).Err())
		opts, optsValid, effective := fuzzOptions(mask, lease, wdt, wait, unlock)
		semValid := optsValid && name != "" && scripts.CheckName(name) == "" && size > 0 && size <= fuzzExactSize
		valid := semValid && n > 0 && n <= size
		s := semaphore.New(client, name, size, semaphore.Options(opts)...)
		acquire := s.TryAcquire
		if useAcquire {
			acquire = s.Acquire
		}
		start := time.Now()
		// However short the wait bound, the first attempt is made: free
		// permits are taken.
		held, err := acquire(ctx, n)
		if !valid {
			require.ErrorIs(t, err, semaphore.ErrInvalidArgument)
			require.Nil(t, held)
			_, err = s.Available(ctx)
			if semValid {
				// Only n was bad: the semaphore itself answers.
				require.NoError(t, err)
				require.ErrorIs(t, s.Release(ctx), semaphore.ErrNotHeld)
			} else {
				require.ErrorIs(t, err, semaphore.ErrInvalidArgument)
				require.ErrorIs(t, s.Release(ctx), semaphore.ErrInvalidArgument)
			}
			require.Empty(t, fuzzKeys(t, client), "nothing may be written on invalid input")
			return
		}
		require.NoError(t, err)
		avail, err := s.Available(ctx)
		require.NoError(t, err)
		require.Equal(t, size-n, avail)
		used, err := client.HGet(ctx, name, "used").Int64()
		require.NoError(t, err)
		require.Equal(t, n, used)

		if err := s.Release(held); err != nil {
			require.True(t, fuzzMayBeLost(err, start, effective), "release: %v", err)
			return
		}
		avail, err = s.Available(ctx)
		require.NoError(t, err)
		require.Equal(t, size, avail)
		for _, k := range fuzzKeys(t, client) {
			switch {
			case strings.HasPrefix(k, scripts.Prefix("redisson_unlock_latch", name)+":"):
			case k == name:
				used, err := client.HGet(ctx, name, "used").Result()
				require.NoError(t, err)
				require.Equal(t, "0", used)
			default:
				t.Fatalf("key %q left after the permits were released", k)
			}
		}
	})
}
