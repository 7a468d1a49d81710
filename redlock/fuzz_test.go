package redlock_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/core"
	"github.com/relock-go/relock/internal/scripts"
	"github.com/relock-go/relock/internal/testkit/redistest"
	"github.com/relock-go/relock/lock"
	"github.com/relock-go/relock/redlock"
	"github.com/relock-go/relock/rwlock"
)

// Bits of the fuzzer's option mask: which option is given.
const (
	fuzzOptLease = 1 << iota
	fuzzOptWait
	fuzzOptUnlock
	fuzzOptNodeTimeout
	fuzzOptDrift
)

// What member i is, from two bits of the kinds argument.
const (
	fuzzMutex = iota
	fuzzWriteSide
	fuzzReadSide
	fuzzNil // a nil *lock.Mutex (typed nil), or a nil interface for the first
)

const fuzzMasters = 5

// FuzzRedlock: whatever the members (0 to 5, mutexes or rwlock sides,
// nil ones), their name and the options, a Redlock never panics; it either
// refuses with ErrInvalidArgument, writing nothing on any master, or holds
// (every member's key on its master, a fencing token), releases, and
// leaves only the fencing counters behind. A configuration that leaves no
// validity time (drift or node timeout as long as the lease) may instead
// fail with ErrNotAcquired, having released every member.
func FuzzRedlock(f *testing.F) {
	clients := make([]redis.UniversalClient, fuzzMasters)
	for i := range clients {
		_, clients[i] = redistest.Miniredis(f)
	}
	const maxI, minI = int64(math.MaxInt64), int64(math.MinInt64)
	sec := int64(time.Second)
	for i, name := range []string{
		"job", "", "работа:⚙", "{", "}", "{{a}", "a{b}c", "{a{b}c}", "}{", "{}", "x\x00y", "\x00",
		strings.Repeat("long", 16<<10),
	} {
		f.Add(name, uint8(3), uint16(0), false, uint8(0), int64(0), int64(0), int64(0), int64(0), int64(0))
		f.Add(name, uint8(i%6), uint16(0b_10_01_00_01_10), i%2 == 0, uint8(fuzzOptLease|fuzzOptNodeTimeout), 10*sec, int64(0), int64(0), sec, int64(0))
	}
	for k := range 6 {
		f.Add("job", uint8(k), uint16(0), false, uint8(0), int64(0), int64(0), int64(0), int64(0), int64(0))
		f.Add("job", uint8(k), uint16(0b_11), true, uint8(0), int64(0), int64(0), int64(0), int64(0), int64(0))
		f.Add("job", uint8(k), uint16(0b_11_00), false, uint8(0), int64(0), int64(0), int64(0), int64(0), int64(0))
	}
	for _, d := range []int64{-1, 0, 1, int64(core.MinLease) - 1, int64(core.MinLease), sec, maxI, minI, maxI / 2} {
		f.Add("job", uint8(3), uint16(0), false, uint8(fuzzOptLease), d, d, d, d, d)
		f.Add("job", uint8(3), uint16(0), true, uint8(fuzzOptNodeTimeout), d, d, d, d, d)
		f.Add("job", uint8(3), uint16(0), false, uint8(fuzzOptDrift), d, d, d, d, d)
		f.Add("job", uint8(3), uint16(0), false, uint8(fuzzOptWait|fuzzOptUnlock), d, d, d, d, d)
		f.Add("job", uint8(3), uint16(0), true, uint8(0xff), d, d, d, d, d)
	}

	f.Fuzz(func(t *testing.T, name string, count uint8, kinds uint16, multi bool, mask uint8, lease, wait, unlock, nodeTimeout, drift int64) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		for _, c := range clients {
			require.NoError(t, c.FlushAll(ctx).Err())
		}
		var opts []redlock.Option
		valid, effective := true, core.DefaultWatchdogTimeout
		if mask&fuzzOptLease != 0 {
			opts = append(opts, redlock.WithLeaseTime(time.Duration(lease)))
			valid = valid && time.Duration(lease) >= core.MinLease && time.Duration(lease) <= core.MaxLease
			effective = time.Duration(lease)
		}
		if mask&fuzzOptWait != 0 {
			opts = append(opts, redlock.WithWaitTimeout(time.Duration(wait)))
			valid = valid && wait > 0
		}
		if mask&fuzzOptUnlock != 0 {
			opts = append(opts, redlock.WithUnlockTimeout(time.Duration(unlock)))
			// Under a millisecond the members' unlock latches would live 0 ms.
			valid = valid && time.Duration(unlock) >= core.MinUnlockTimeout && time.Duration(unlock) <= core.MaxUnlockTimeout
		}
		if mask&fuzzOptNodeTimeout != 0 {
			opts = append(opts, redlock.WithNodeTimeout(time.Duration(nodeTimeout)))
			// It is the give-back's unlock timeout too: at least 1 ms.
			valid = valid && time.Duration(nodeTimeout) >= core.MinUnlockTimeout && time.Duration(nodeTimeout) <= core.MaxUnlockTimeout
		}
		if mask&fuzzOptDrift != 0 {
			opts = append(opts, redlock.WithDrift(time.Duration(drift)))
			valid = valid && drift >= 0
		}
		n := int(count % (fuzzMasters + 1))
		valid = valid && n > 0 && name != "" && scripts.CheckName(name) == ""
		members := make([]redlock.Member, n)
		kindOf := make([]int, n)
		for i := range n {
			kindOf[i] = int(kinds>>(2*i)) & 3
			switch kindOf[i] {
			case fuzzMutex:
				members[i] = lock.New(clients[i], name)
			case fuzzWriteSide:
				members[i] = rwlock.New(clients[i], name).WriteLocker()
			case fuzzReadSide:
				members[i] = rwlock.New(clients[i], name).ReadLocker()
			case fuzzNil:
				valid = false
				if i > 0 {
					members[i] = (*lock.Mutex)(nil)
				}
			}
		}
		l := redlock.New(members, opts...)
		if multi {
			l = redlock.NewMulti(members, opts...)
		}
		held, err := l.TryLock(ctx)
		if !valid {
			require.ErrorIs(t, err, redlock.ErrInvalidArgument)
			require.Nil(t, held)
			_, err = l.Lock(ctx)
			require.ErrorIs(t, err, redlock.ErrInvalidArgument)
			require.ErrorIs(t, l.Unlock(ctx), redlock.ErrInvalidArgument)
			for i, c := range clients {
				ks, err := c.Keys(ctx, "*").Result()
				require.NoError(t, err)
				require.Empty(t, ks, "master %d: nothing may be written on invalid input", i)
			}
			return
		}
		nt := min(redlock.DefaultNodeTimeout, effective/10)
		if mask&fuzzOptNodeTimeout != 0 {
			nt = time.Duration(nodeTimeout)
		}
		if errors.Is(err, redlock.ErrNotAcquired) {
			// Only when the configuration leaves (next to) no validity
			// time, or a short node timeout passed on a loaded machine
			// (the race detector, the other packages' tests beside it).
			d := effective/100 + 2*time.Millisecond
			if mask&fuzzOptDrift != 0 {
				d = time.Duration(drift)
			}
			require.True(t, d >= effective/2 || nt < 5*time.Millisecond || effective < time.Second || memberTimedOut(err, nt),
				"a valid Redlock on idle masters was not acquired: %v", err)
			require.NoError(t, l.Drain(ctx))
			fuzzOnlyCounters(t, ctx, clients, name)
			return
		}
		require.NoError(t, err)
		_, ok := lock.FencingToken(held)
		require.True(t, ok)
		// A member that had not answered when the round was decided (a
		// loaded machine) is left behind and holds nothing; the others
		// hold it once each, and they are a quorum.
		heldOn := 0
		for i := range n {
			mode, err := clients[i].HGet(ctx, name, "mode").Result()
			if kindOf[i] == fuzzMutex {
				require.ErrorIs(t, err, redis.Nil, "member %d: a lock hash has no mode", i)
				cnt, err := clients[i].HLen(ctx, name).Result()
				require.NoError(t, err)
				require.LessOrEqual(t, cnt, int64(1), "member %d: one holder", i)
				heldOn += int(cnt)
				continue
			}
			if errors.Is(err, redis.Nil) {
				continue
			}
			require.NoError(t, err)
			require.Equal(t, map[int]string{fuzzWriteSide: "write", fuzzReadSide: "read"}[kindOf[i]], mode, "member %d", i)
			heldOn++
		}
		require.GreaterOrEqual(t, heldOn, l.Quorum(), "held on a quorum")
		if err := l.Unlock(held); err != nil {
			// A fixed lease this short may lapse while the body runs; a
			// short node timeout may pass on a loaded machine, and the
			// release then goes on in the background.
			lapsed := errors.Is(err, redlock.ErrLockLost) && effective < time.Second
			slow := memberTimedOut(err, nt)
			require.True(t, lapsed || slow, "unlock: %v", err)
			if slow {
				require.NoError(t, l.Drain(ctx))
				fuzzOnlyCounters(t, ctx, clients, name)
			}
			return
		}
		require.NoError(t, l.Drain(ctx))
		fuzzOnlyCounters(t, ctx, clients, name)
	})
}

// fuzzOnlyCounters checks that every master holds at most name's fencing
// counter (and unlock latches, which outlive a release on purpose).
func fuzzOnlyCounters(t *testing.T, ctx context.Context, clients []redis.UniversalClient, name string) {
	t.Helper()
	for i, c := range clients {
		ks, err := c.Keys(ctx, "*").Result()
		require.NoError(t, err)
		for _, k := range ks {
			if k != scripts.Prefix("redisson_lock_token", name) && !strings.HasPrefix(k, scripts.Prefix("redisson_unlock_latch", name)+":") && !strings.HasPrefix(k, scripts.Prefix("relock_acquire_latch", name)+":") {
				t.Fatalf("master %d: key %q left after the Redlock was released", i, k)
			}
		}
	}
}

// memberTimedOut reports whether err is a member's node timeout passing,
// with a timeout short enough (nt) that a loaded machine may miss it.
func memberTimedOut(err error, nt time.Duration) bool {
	var ne *redlock.NodeError
	timedOut := errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Outcome == redlock.OutcomeTimeout)
	return timedOut && nt < 100*time.Millisecond
}
