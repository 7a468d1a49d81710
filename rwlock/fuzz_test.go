package rwlock_test

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
	"github.com/relock-go/relock/rwlock"
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

// The operations FuzzRWMutex runs on a valid lock.
const (
	fuzzRead = iota
	fuzzReadTwice
	fuzzWrite
	fuzzWriteThenRead
	fuzzDowngrade
	fuzzOps
)

// FuzzRWMutex: whatever the name and the options, the read and write
// locks never panic; they either refuse with ErrInvalidArgument, writing
// nothing, or yield a hold that is visible (the hash's mode), re-enters,
// downgrades, releases and leaves only the fencing counter and unlock
// latches behind.
func FuzzRWMutex(f *testing.F) {
	_, client := redistest.Miniredis(f)
	const maxI, minI = int64(math.MaxInt64), int64(math.MinInt64)
	sec := int64(time.Second)
	for i, name := range []string{
		"catalog", "", "каталог:📚", "{", "}", "{{a}", "a{b}c", "{a{b}c}", "}{", "{}", "x\x00y", "\x00",
		strings.Repeat("long", 16<<10), "{catalog}:rwlock_write_waiters",
	} {
		f.Add(name, uint8(0), int64(0), int64(0), int64(0), int64(0), uint8(i%fuzzOps), false)
		f.Add(name, uint8(fuzzOptLease|fuzzOptUnlock), 10*sec, int64(0), int64(0), sec, uint8((i+2)%fuzzOps), true)
	}
	for i, d := range []int64{-1, 0, 1, int64(core.MinLease) - 1, int64(core.MinLease), sec, maxI, minI, maxI / 2} {
		f.Add("c", uint8(fuzzOptLease), d, d, d, d, uint8(i%fuzzOps), true)
		f.Add("c", uint8(fuzzOptWatchdog), d, d, d, d, uint8((i+1)%fuzzOps), false)
		f.Add("c", uint8(fuzzOptUnlock), d, d, d, d, uint8(fuzzReadTwice), true)
		f.Add("c", uint8(0xff), d, d, d, d, uint8(fuzzDowngrade), false)
	}

	f.Fuzz(func(t *testing.T, name string, mask uint8, lease, wdt, wait, unlock int64, op uint8, useLock bool) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		require.NoError(t, client.FlushAll(ctx).Err())
		opts, valid, effective := fuzzOptions(mask, lease, wdt, wait, unlock)
		valid = valid && name != "" && scripts.CheckName(name) == ""
		rw := rwlock.New(client, name, rwlock.Options(opts)...)
		op %= fuzzOps
		write := op >= fuzzWrite
		var acquire func(context.Context, ...rwlock.LockOption) (context.Context, error)
		switch {
		case write && useLock:
			acquire = rw.Lock
		case write:
			acquire = rw.TryLock
		case useLock:
			acquire = rw.RLock
		default:
			acquire = rw.TryRLock
		}
		start := time.Now()
		// However short the wait bound, the first attempt is made: a free
		// lock is taken (and a re-entry below succeeds).
		held, err := acquire(ctx)
		if !valid {
			require.ErrorIs(t, err, rwlock.ErrInvalidArgument)
			require.Nil(t, held)
			downgrade := func(ctx context.Context, _ ...rwlock.LockOption) (context.Context, error) { return rw.Downgrade(ctx) }
			for _, f := range []func(context.Context, ...rwlock.LockOption) (context.Context, error){rw.RLock, rw.TryRLock, rw.Lock, rw.TryLock, downgrade} {
				_, err := f(ctx)
				require.ErrorIs(t, err, rwlock.ErrInvalidArgument)
			}
			require.ErrorIs(t, rw.Unlock(ctx), rwlock.ErrInvalidArgument)
			require.ErrorIs(t, rw.RUnlock(ctx), rwlock.ErrInvalidArgument)
			require.Empty(t, fuzzKeys(t, client), "nothing may be written on invalid input")
			return
		}
		require.NoError(t, err)
		tok, ok := rwlock.FencingToken(held)
		require.True(t, ok)
		require.Positive(t, tok)
		mode := "read"
		if write {
			mode = "write"
		}
		got, err := client.HGet(ctx, name, "mode").Result()
		require.NoError(t, err)
		require.Equal(t, mode, got)

		release := rw.RUnlock
		if write {
			release = rw.Unlock
		}
		switch op {
		case fuzzReadTwice, fuzzWriteThenRead:
			inner, err := rw.RLock(held)
			require.NoError(t, err)
			tok2, _ := rwlock.FencingToken(inner)
			require.Greater(t, tok2, tok, "re-entry draws a larger token")
			if err := rw.RUnlock(inner); err != nil {
				require.True(t, fuzzMayBeLost(err, start, effective), "inner runlock: %v", err)
				return
			}
		case fuzzDowngrade:
			r, err := rw.Downgrade(held)
			if err != nil {
				require.True(t, fuzzMayBeLost(err, start, effective), "downgrade: %v", err)
				return
			}
			require.Error(t, held.Err(), "the write hold ends")
			got, err := client.HGet(ctx, name, "mode").Result()
			require.NoError(t, err)
			require.Equal(t, "read", got)
			held, release = r, rw.RUnlock
		}
		if err := release(held); err != nil {
			require.True(t, fuzzMayBeLost(err, start, effective), "release: %v", err)
			return
		}
		for _, k := range fuzzKeys(t, client) {
			if k != scripts.Prefix("redisson_lock_token", name) && !strings.HasPrefix(k, scripts.Prefix("redisson_unlock_latch", name)+":") && !strings.HasPrefix(k, scripts.Prefix("relock_acquire_latch", name)+":") {
				t.Fatalf("key %q left after the hold was released", k)
			}
		}
	})
}
