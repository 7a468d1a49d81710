package redlock_test

import (
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/lock"
	"github.com/relock-go/relock/redlock"
	"github.com/relock-go/relock/rwlock"
	"github.com/relock-go/relock/watchdog"
)

// Options given to members are honoured: the Redlock takes a member's
// lease, unlock timeout and watchdog when it was given none, and refuses a
// conflict (between members, or with its own) with ErrInvalidArgument
// before it writes anything.
func TestMemberOptionsHonouredOrRefused(t *testing.T) {
	ms := startMasters(t, 3)
	cs := ms.process(t)
	ctx := ctxT(t)

	withLease := func(name string, d time.Duration) []redlock.Member {
		out := make([]redlock.Member, len(cs))
		for i, c := range cs {
			out[i] = lock.New(c, name, lock.WithLeaseTime(d))
		}
		return out
	}

	t.Run("member lease honoured", func(t *testing.T) {
		l := redlock.New(withLease("opt:honoured", 2*time.Second))
		held, err := l.Lock(ctx)
		require.NoError(t, err)
		heldOn := 0
		for i, a := range ms.admins {
			pttl, err := a.PTTL(ctx, "opt:honoured").Result()
			require.NoError(t, err)
			if pttl < 0 {
				continue // left behind on a loaded machine: holds nothing
			}
			heldOn++
			require.Greater(t, pttl, time.Second, "master %d", i)
			require.LessOrEqual(t, pttl, 2*time.Second, "master %d: the member's 2 s lease, not the default 30 s", i)
		}
		require.GreaterOrEqual(t, heldOn, 2)
		require.NoError(t, l.Unlock(held))
		require.NoError(t, l.Drain(ctx))
	})

	t.Run("member watchdog honoured", func(t *testing.T) {
		wd := watchdog.New()
		members := make([]redlock.Member, len(cs))
		for i, c := range cs {
			members[i] = lock.New(c, "opt:watchdog", lock.WithWatchdog(wd), lock.WithWatchdogTimeout(300*time.Millisecond))
		}
		l := redlock.New(members)
		held, err := l.Lock(ctx)
		require.NoError(t, err)
		time.Sleep(500 * time.Millisecond) // past the 300 ms lease: renewed, by wd
		require.NoError(t, held.Err())
		require.GreaterOrEqual(t, wd.Stats().Renewed, int64(2), "the members' watchdog renews the hold")
		require.NoError(t, l.Unlock(held))
		require.NoError(t, l.Drain(ctx))
	})

	mixed := withLease("opt:mixed", 2*time.Second)
	mixed[1] = lock.New(cs[1], "opt:mixed", lock.WithLeaseTime(3*time.Second))
	otherWD := watchdog.New()
	for name, l := range map[string]*redlock.Lock{
		"members disagree on lease": redlock.New(mixed),
		"member lease against the Redlock's": redlock.New(withLease("opt:against", 2*time.Second),
			redlock.WithLeaseTime(3*time.Second)),
		"fixed lease against a renewed one": redlock.New(withLease("opt:renewed", 2*time.Second),
			redlock.WithWatchdogTimeout(2*time.Second)),
		"unlock timeouts disagree": redlock.New([]redlock.Member{
			lock.New(cs[0], "opt:unlock", lock.WithUnlockTimeout(time.Second)),
			lock.New(cs[1], "opt:unlock", lock.WithUnlockTimeout(2*time.Second)),
			lock.New(cs[2], "opt:unlock"),
		}),
		"watchdogs disagree": redlock.New([]redlock.Member{
			lock.New(cs[0], "opt:wd"),
			rwlock.New(cs[1], "opt:wd").WriteLocker(),
			lock.New(cs[2], "opt:wd", lock.WithWatchdog(otherWD)),
		}, redlock.WithWatchdog(watchdog.Default())),
	} {
		t.Run(name, func(t *testing.T) {
			_, err := l.TryLock(ctx)
			require.ErrorIs(t, err, redlock.ErrInvalidArgument)
			require.ErrorContains(t, err, "member ")
			t.Log(err)
			_, err = l.Lock(ctx)
			require.ErrorIs(t, err, redlock.ErrInvalidArgument)
			for i, a := range ms.admins {
				keys, err := a.Keys(ctx, "*").Result()
				require.NoError(t, err)
				for _, k := range keys {
					require.NotContains(t, k, l.Name(), "master %d: nothing written", i)
				}
			}
		})
	}
}

// The same rules on miniredis, where a member's lease is read back as the
// key's TTL.
func TestMemberLeaseHonouredMiniredis(t *testing.T) {
	ctx := ctxT(t)
	var members []redlock.Member
	var srvs []*miniredis.Miniredis
	for range 3 {
		mr := miniredis.RunT(t)
		c := redis.NewClient(&redis.Options{Addr: mr.Addr()})
		t.Cleanup(func() { _ = c.Close() })
		srvs = append(srvs, mr)
		members = append(members, lock.New(c, "opt:mini", lock.WithLeaseTime(5*time.Second)))
	}
	l := redlock.New(members)
	held, err := l.Lock(ctx)
	require.NoError(t, err)
	heldOn := 0
	for i, mr := range srvs {
		if mr.Exists("opt:mini") { // a member left behind on a loaded machine holds nothing
			require.Equal(t, 5*time.Second, mr.TTL("opt:mini"), "miniredis %d", i)
			heldOn++
		}
	}
	require.GreaterOrEqual(t, heldOn, 2)
	require.NoError(t, l.Unlock(held))
	require.NoError(t, l.Drain(ctx))

	bad := redlock.New(members, redlock.WithLeaseTime(time.Second))
	_, err = bad.TryLock(ctx)
	require.ErrorIs(t, err, redlock.ErrInvalidArgument)
	require.ErrorContains(t, err, "lease time 5s differs")
}
