package lock_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/testkit/redistest"
	"github.com/relock-go/relock/lock"
)

const (
	// sentinelLease is the holder's watchdog lease in the failover: short,
	// so a loss is reported within seconds of the kill.
	sentinelLease = 2 * time.Second
	// sentinelRelockBound bounds a new Lock after the failover.
	sentinelRelockBound = 20 * time.Second
)

// TestSentinel runs the lock through a failover client (Redis Sentinel:
// a master, a replica, one sentinel): the usual operations and pub/sub
// wake-ups, then a SIGKILL of the master while a lock is held.
func TestSentinel(t *testing.T) {
	rdb, g := redistest.StartSentinel(t)
	ctx := ctxT(t)
	master := g.Master.Client(t)

	t.Run("LockReentryAndWake", func(t *testing.T) {
		const name = "sentinel:basic"
		mu := lock.New(rdb, name)
		held, err := mu.Lock(ctx)
		require.NoError(t, err)
		inner, err := mu.Lock(held)
		require.NoError(t, err)
		n, err := mu.HoldCount(inner)
		require.NoError(t, err)
		require.Equal(t, 2, n)
		// The failover client wrote to the master the sentinel names.
		require.Equal(t, 2, mustInt(t, master.HGet(ctx, name, ownerField(t, master, name))))
		require.NoError(t, mu.Unlock(inner))
		require.NoError(t, held.Err(), "an inner unlock leaves the outer hold alone")
		require.NoError(t, mu.Unlock(held))
		locked, err := mu.IsLocked(ctx)
		require.NoError(t, err)
		require.False(t, locked)

		// The holder is another "process", so the waiter cannot be handed
		// the lock locally: only the unlock message can wake it before the
		// default 30 s lease would.
		other := g.NewClient(t)
		theirs, err := lock.New(other, name).Lock(ctx)
		require.NoError(t, err)
		got := lockAsync(lock.New(rdb, name), ctx)
		require.Eventually(t, func() bool {
			res, err := master.PubSubNumSub(ctx, channelOf(name)).Result()
			return err == nil && res[channelOf(name)] == 1
		}, 10*time.Second, 5*time.Millisecond, "the waiter subscribed through the failover client")
		select {
		case r := <-got:
			t.Fatalf("waiter returned while the lock was held: %v", r.err)
		default:
		}
		unlocked := time.Now()
		require.NoError(t, lock.New(other, name).Unlock(theirs))
		r := await(t, got, "waiter")
		require.NoError(t, r.err)
		require.Less(t, time.Since(unlocked), 2*time.Second, "woken by the message, not the lease")
		require.NoError(t, lock.New(rdb, name).Unlock(r.ctx))
	})

	t.Run("Failover", func(t *testing.T) {
		const name = "sentinel:failover"
		mu := lock.New(rdb, name, lock.WithWatchdogTimeout(sentinelLease))
		held, err := mu.Lock(ctx)
		require.NoError(t, err)
		tok, ok := lock.FencingToken(held)
		require.True(t, ok)
		owner := ownerField(t, master, name)

		// Replication is asynchronous. Waiting until the replica has the
		// hold makes the promoted node hold it too, so the outcome depends
		// only on the race between the failover and the lease.
		replica := g.Replica.Client(t)
		require.Eventually(t, func() bool {
			had, err := replica.HExists(ctx, name, owner).Result()
			return err == nil && had
		}, 5*time.Second, 5*time.Millisecond, "the hold reaches the replica")

		// When the hold ends is taken as it happens: the select below runs
		// only after the failover.
		endedAt := make(chan time.Time, 1)
		stop := context.AfterFunc(held, func() { endedAt <- time.Now() })
		defer stop()

		g.Master.Kill()
		killed := time.Now()
		fctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		defer cancel()
		to, err := g.WaitFailover(fctx, g.Master.Addr)
		require.NoError(t, err)
		require.Equal(t, g.Replica.Addr, to)
		failedOver := time.Now()
		t.Logf("failover %v after the kill", failedOver.Sub(killed))

		// Either the watchdog could not renew before the lease ran out (or
		// found the hold gone) and ends the hold, or it renews on the new
		// master and the hold lives on. Two leases after the failover the
		// watchdog has tried six renewals there, so the outcome is settled.
		select {
		case ended := <-endedAt:
			lostAfter := ended.Sub(killed)
			t.Logf("OUTCOME lost: the holder was told %v after the kill (lease %v; failover took %v)",
				lostAfter, sentinelLease, failedOver.Sub(killed))
			require.ErrorIs(t, context.Cause(held), lock.ErrLockLost)
			// Its last renewal came before the kill, so the lease ran out
			// at most a lease later: the holder is told then, not later.
			require.Less(t, lostAfter, sentinelLease+time.Second)
			require.ErrorIs(t, mu.Unlock(held), lock.ErrLockLost)
		case <-time.After(2 * sentinelLease):
			t.Logf("OUTCOME kept: the hold survived the failover (failover took %v, lease %v)",
				failedOver.Sub(killed), sentinelLease)
			require.NoError(t, held.Err())
			n, err := mu.HoldCount(held)
			require.NoError(t, err)
			require.Equal(t, 1, n, "the new master holds the lock for the holder")
			has, err := replica.HExists(ctx, name, owner).Result()
			require.NoError(t, err)
			require.True(t, has)
			ttl, err := mu.TTL(ctx)
			require.NoError(t, err)
			require.Positive(t, ttl, "the watchdog renews on the new master")
			require.NoError(t, mu.Unlock(held))
		}

		// The failover client follows the new master: another owner takes
		// the lock, with a larger fencing token (the counter was replicated
		// with the hold).
		// (The new master has no cached scripts: the EVALSHA falls back to
		// EVAL.)
		relock := lock.New(rdb, name, lock.WithWaitTimeout(sentinelRelockBound))
		start := time.Now()
		again, err := relock.Lock(ctx)
		require.NoError(t, err)
		t.Logf("relocked in %v, %v after the failover", time.Since(start), time.Since(failedOver))
		require.Less(t, time.Since(failedOver), sentinelRelockBound)
		tok2, ok := lock.FencingToken(again)
		require.True(t, ok)
		require.Greater(t, tok2, tok)
		has, err := replica.HExists(ctx, name, ownerField(t, replica, name)).Result()
		require.NoError(t, err)
		require.True(t, has, "the new hold is on the promoted replica")
		require.NoError(t, relock.Unlock(again))
	})
}
