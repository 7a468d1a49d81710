package lock_test

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/testkit/history"
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

		// The failover client follows the new master: another owner, with
		// replica sync off, takes the lock, with a larger fencing token (the counter was replicated
		// with the hold).
		// (The new master has no cached scripts: the EVALSHA falls back to
		// EVAL.)
		// A synced lock is refused there: the new master has no replica.
		_, err = lock.New(rdb, name).TryLock(ctx)
		require.ErrorIs(t, err, lock.ErrNotReplicated)
		relock := lock.New(rdb, name, lock.WithReplicaSync(0), lock.WithWaitTimeout(sentinelRelockBound))
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

// failoverRuns is how many failovers each replica-sync case makes: one in
// the test suite; RELOCK_FAILOVER_RUNS=10 measures how often a hold is
// lost (each run starts its own Sentinel group and takes ~5 s).
func failoverRuns(t *testing.T) int {
	if s := os.Getenv("RELOCK_FAILOVER_RUNS"); s != "" {
		n, err := strconv.Atoi(s)
		require.NoError(t, err, "RELOCK_FAILOVER_RUNS")
		return n
	}
	return 1
}

// failoverOutcome is what one failover did to a hold.
type failoverOutcome struct {
	granted bool // the holder's Lock returned before the kill
	kept    bool // the promoted replica has the hold, and the holder keeps it
	double  bool // a second owner was granted while the holder believed it held
}

// failoverOnce runs one failover of a fresh Sentinel group with a hold
// taken just before the master is killed: with the replica in sync, or
// lagging (stopped behind 32 MB of stream) while the hold is taken. A second owner (another client) then tries the lock on the new
// master. The holder's belief (from its Lock's return to its Unlock or
// its being told of the loss) and the second owner's hold go into a
// history, whose check is the double-grant verdict.
func failoverOnce(t *testing.T, synced, stall bool) failoverOutcome {
	rdb, g := redistest.StartSentinel(t)
	ctx := ctxT(t)
	const name = "sentinel:synced"
	opts := []lock.Option{lock.WithWatchdogTimeout(10 * time.Second)} // outlives the failover
	if !synced {
		opts = append(opts, lock.WithReplicaSync(0))
	}
	mu := lock.New(rdb, name, opts...)
	hist := history.New()
	var out failoverOutcome

	if stall {
		// A replica that lags: stopped, with more replication stream
		// queued than the sockets between it and the master hold, so
		// that what comes next stays in the master's memory and dies
		// with it (a stopped replica alone would still find the write in
		// its socket buffer when it resumes).
		g.Replica.Pause(t)
		master := g.Master.Client(t)
		junk := strings.Repeat("x", 1<<20)
		for i := range 32 {
			require.NoError(t, master.Set(ctx, "junk:"+strconv.Itoa(i), junk, 0).Err())
		}
	}
	// Granted or not within a short bound: with sync on and the replica
	// stalled it is not, and the hold never exists.
	held, err := mu.Lock(ctx, lock.WithWaitTimeout(500*time.Millisecond))
	acquired := time.Now()
	out.granted = err == nil
	if synced && stall {
		require.ErrorIs(t, err, lock.ErrNotReplicated)
	} else {
		require.NoError(t, err)
	}
	g.Master.Kill()
	g.Replica.Resume()
	fctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	_, err = g.WaitFailover(fctx, g.Master.Addr)
	require.NoError(t, err)
	promoted := g.Replica.Client(t)

	if out.granted {
		tok, _ := lock.FencingToken(held)
		// When the holder stops believing it holds: told of the loss, or
		// its Unlock below.
		told := make(chan time.Time, 1)
		defer context.AfterFunc(held, func() { told <- time.Now() })()
		fields, err := promoted.HKeys(ctx, name).Result()
		require.NoError(t, err)
		out.kept = len(fields) == 1 && held.Err() == nil
		// The second owner tries while the holder believes it holds.
		second := lock.New(g.NewClient(t), name, opts...)
		theirs, err := second.TryLock(ctx)
		if err == nil {
			got := time.Now()
			out.double = held.Err() == nil
			tok2, _ := lock.FencingToken(theirs)
			hist.Add(history.Hold{Lock: name, Owner: "second", Kind: history.Exclusive, Token: tok2, HasToken: true, Acquired: got, Released: time.Now()})
			require.NoError(t, second.Unlock(theirs))
		} else {
			require.ErrorIs(t, err, lock.ErrNotAcquired)
		}
		released := time.Now()
		select {
		case released = <-told:
		default:
		}
		hist.Add(history.Hold{Lock: name, Owner: "holder", Kind: history.Exclusive, Token: tok, HasToken: true, Acquired: acquired, Released: released})
		if out.kept {
			require.NoError(t, mu.Unlock(held), "the holder keeps the hold through the failover")
		} else {
			_ = mu.Unlock(held)
		}
	}
	if !out.double {
		require.NoError(t, hist.Err())
	} else {
		require.Error(t, hist.Err(), "the history checker sees the double grant")
	}
	requireNewMasterRefusesSyncedLocks(t, ctx, rdb, name, synced)
	return out
}

// requireNewMasterRefusesSyncedLocks checks the promoted replica, which
// has no replica of its own: a client that saw the deployment's replica
// (synced) is refused a synced lock there, whose hold a second failover
// would lose, and takes the lock with replica sync off.
func requireNewMasterRefusesSyncedLocks(t *testing.T, ctx context.Context, rdb redis.UniversalClient, name string, synced bool) {
	t.Helper()
	if synced {
		_, err := lock.New(rdb, name).TryLock(ctx)
		require.ErrorIs(t, err, lock.ErrNotReplicated, "no replica online on the new master")
	}
	mu := lock.New(rdb, name, lock.WithReplicaSync(0), lock.WithWaitTimeout(sentinelRelockBound))
	again, err := mu.Lock(ctx)
	require.NoError(t, err)
	require.NoError(t, mu.Unlock(again))
}

// TestSentinelReplicaSync is what replica sync is for. With it (the
// default), a hold granted just before the master dies is on the promoted
// replica, the holder keeps it and a second owner is refused; a hold
// taken while the replica is stalled is not granted at all. Without it,
// the lagging replica is promoted without the hold, and a second owner is
// granted the lock its holder still believes it holds.
func TestSentinelReplicaSync(t *testing.T) {
	runs := failoverRuns(t)
	type failoverCase struct {
		name          string
		synced, stall bool
	}
	cases := []failoverCase{
		{"synced", true, false},
		{"synced/lagging replica", true, true},
		{"unsynced/lagging replica", false, true},
	}
	if os.Getenv("RELOCK_FAILOVER_RUNS") != "" {
		// A race between the reply and the replication stream: measured
		// (how often the hold is lost), not asserted.
		cases = append(cases, failoverCase{"unsynced", false, false})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var granted, kept, double int
			for i := range runs {
				t.Run(strconv.Itoa(i), func(t *testing.T) {
					out := failoverOnce(t, c.synced, c.stall)
					if out.granted {
						granted++
					}
					if out.kept {
						kept++
					}
					if out.double {
						double++
					}
				})
			}
			t.Logf("FAILOVER %s: %d runs, %d granted before the kill, %d kept through the failover, %d double grants",
				c.name, runs, granted, kept, double)
			if c.synced {
				require.Zero(t, double, "replica sync: no double grant")
				if !c.stall {
					require.Equal(t, runs, kept, "replica sync: every hold survives the failover")
				}
			}
			if !c.synced && c.stall {
				require.Equal(t, runs, double, "without replica sync, a hold the lagging replica missed is granted twice")
			}
		})
	}
}
