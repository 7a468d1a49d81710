package lock_test

import (
	"testing"
	"time"

	"github.com/relock-go/relock/internal/conn"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/testkit/redistest"
	"github.com/relock-go/relock/lock"
)

// A waiter's subscription follows its lock's slot when the slot moves to
// another master: the old master drops the shard channel (sunsubscribe),
// the waiter subscribes on the new one, and the unlock published there
// wakes it at once, not at its fallback timer (the 30 s lease).
func TestSlotMigrationWakesWaiters(t *testing.T) {
	ctx := ctxT(t)
	_, servers := redistest.StartCluster(t, 2)
	if servers == nil {
		return
	}
	holderClient := redistest.NewClusterClient(servers)
	defer holderClient.Close()
	const name = "reshard:job"
	channel := channelOf(name)
	mu := lock.New(holderClient, name)
	held, err := mu.Lock(ctx)
	require.NoError(t, err)

	type woke struct {
		i int
		acquired
	}
	waiters := make([]*redis.ClusterClient, 3) // three processes wait
	results := make(chan woke, len(waiters))
	for i := range waiters {
		waiters[i] = redistest.NewClusterClient(servers)
		defer waiters[i].Close()
		go func() {
			r := <-lockAsync(lock.New(waiters[i], name), ctx)
			results <- woke{i, r}
		}()
	}
	require.Eventually(t, func() bool {
		n, err := redistest.Subscribers(ctx, holderClient, channel)
		return err == nil && n == int64(len(waiters))
	}, 10*time.Second, 10*time.Millisecond, "the waiters subscribed")

	slot := conn.Slot(name)
	from, err := holderClient.MasterForKey(ctx, name)
	require.NoError(t, err)
	to := servers[0]
	if to.Addr == from.Options().Addr {
		to = servers[1]
	}
	require.NoError(t, redistest.MoveSlot(ctx, servers, slot, to))
	newOwner := to.Client(t)
	require.Eventually(t, func() bool {
		res, err := newOwner.PubSubShardNumSub(ctx, channel).Result()
		return err == nil && res[channel] == int64(len(waiters))
	}, 10*time.Second, 10*time.Millisecond, "the waiters followed the slot to its new master")

	// Each unlock, published on the new master, wakes the next waiter:
	// well within the 30 s lease its fallback timer would wait.
	unlock := func() error { return mu.Unlock(held) }
	for range waiters {
		unlocked := time.Now()
		require.NoError(t, unlock())
		select {
		case w := <-results:
			require.NoError(t, w.err)
			t.Logf("waiter %d took the lock %v after the unlock", w.i, time.Since(unlocked))
			unlock = func() error { return lock.New(waiters[w.i], name).Unlock(w.ctx) }
		case <-time.After(10 * time.Second):
			t.Fatal("no waiter woke within 10 s of the unlock (the lease is 30 s)")
		}
	}
	require.NoError(t, unlock())
}

// A waiter's subscription follows its lock's slot through a failover of
// the cluster: the dead master's connection fails, the slot's promoted
// replica serves it, the waiters subscribe there, and the holder's unlock
// (its hold survived: replica sync) wakes them at once.
func TestClusterFailoverWakesWaiters(t *testing.T) {
	ctx := ctxT(t)
	// Three masters: a failover needs the votes of a majority of them.
	cc, masters, replicas := redistest.StartClusterWithReplicas(t, 3)
	if cc == nil {
		return
	}
	const name = "failover:job"
	channel := channelOf(name)
	node, err := cc.MasterForKey(ctx, name)
	require.NoError(t, err)
	owner := 0
	for i, m := range masters {
		if m.Addr == node.Options().Addr {
			owner = i
		}
	}
	servers := append(append([]*redistest.Server{}, masters...), replicas...)
	holderClient := redistest.NewClusterClient(servers)
	defer holderClient.Close()
	// Replica sync off for both: the promoted replica has no replica of
	// its own, where a synced hold is not renewed and a synced
	// acquisition is refused (TestReplicaSync*, TestSentinel*).
	mu := lock.New(holderClient, name, lock.WithWatchdogTimeout(15*time.Second), lock.WithReplicaSync(0))
	held, err := mu.Lock(ctx)
	require.NoError(t, err)

	waiter := redistest.NewClusterClient(servers)
	defer waiter.Close()
	got := lockAsync(lock.New(waiter, name, lock.WithReplicaSync(0)), ctx)
	require.Eventually(t, func() bool {
		n, err := redistest.Subscribers(ctx, holderClient, channel)
		return err == nil && n == 1
	}, 10*time.Second, 10*time.Millisecond, "the waiter subscribed")

	masters[owner].Kill()
	promoted := replicas[owner].Client(t)
	if !assertEventually(t, func() bool {
		role, err := promoted.Do(ctx, "ROLE").Slice()
		return err == nil && len(role) > 0 && role[0] == "master"
	}, 20*time.Second, "the replica took over") {
		for _, s := range servers {
			t.Log(s.LogTail())
		}
		t.FailNow()
	}
	require.Eventually(t, func() bool {
		res, err := promoted.PubSubShardNumSub(ctx, channel).Result()
		return err == nil && res[channel] == 1
	}, 20*time.Second, 50*time.Millisecond, "the waiter subscribed on the promoted replica")

	require.NoError(t, held.Err(), "the hold survived the failover")
	unlocking := time.Now()
	require.NoError(t, mu.Unlock(held))
	unlocked := time.Now()
	select {
	case r := <-got:
		require.NoError(t, r.err)
		t.Logf("the unlock took %v; the waiter took the lock %v after it", unlocked.Sub(unlocking), time.Since(unlocked))
		require.NoError(t, lock.New(waiter, name).Unlock(r.ctx))
	case <-time.After(10 * time.Second):
		t.Fatal("the waiter did not wake within 10 s of the unlock (the lease is 30 s)")
	}
}

// assertEventually is require.Eventually without the stop, so that a
// failure can add what the servers logged.
func assertEventually(t *testing.T, cond func() bool, within time.Duration, what string) bool {
	t.Helper()
	return assert.Eventually(t, cond, within, 50*time.Millisecond, what)
}
