package redlock_test

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/core"
	"github.com/relock-go/relock/internal/testkit/redistest"
	"github.com/relock-go/relock/lock"
	"github.com/relock-go/relock/redlock"
)

// stop stalls master i's process (SIGSTOP, as a hung VM or a stuck disk
// would) until the returned func resumes it; a cleanup resumes it too.
func (ms *masters) stop(t *testing.T, i int) (resume func()) {
	t.Helper()
	pid := ms.srvs[i].Pid()
	require.NoError(t, syscall.Kill(pid, syscall.SIGSTOP))
	resume = func() { _ = syscall.Kill(pid, syscall.SIGCONT) }
	t.Cleanup(resume)
	return resume
}

// patientMasters starts n masters and one process's clients of them,
// whose reads wait out a stall of several seconds (so that a release sent
// to a stopped master is answered once it resumes), each with a
// connection open (so that a stall hits a command, not a dial).
func patientMasters(t *testing.T, ctx context.Context, n int) (*masters, []*redis.Client) {
	t.Helper()
	redistest.RequireRedisServer(t)
	ms := startMasters(t, n)
	cs := ms.process(t, func(o *redis.Options) { o.ReadTimeout = 10 * time.Second })
	for _, c := range cs {
		require.NoError(t, c.Ping(ctx).Err())
	}
	return ms, cs
}

// TestUnlockWithStalledMembersReturnsOnQuorum: two of five masters stop
// while the Redlock is held. Unlock returns once the three others
// released, not after the stalled ones; their releases finish in the
// background once they resume.
func TestUnlockWithStalledMembersReturnsOnQuorum(t *testing.T) {
	ctx := ctxT(t)
	ms, cs := patientMasters(t, ctx, 5)
	rl := redlock.New(mutexes(cs, "stop:unlock"), redlock.WithUnlockTimeout(10*time.Second))
	held, err := rl.Lock(ctx)
	require.NoError(t, err)
	require.Equal(t, ones(5), ms.existsOn(t, "stop:unlock", ms.all()...))

	resume0, resume1 := ms.stop(t, 0), ms.stop(t, 1)
	start := time.Now()
	require.NoError(t, rl.Unlock(held))
	took := time.Since(start)
	t.Logf("Unlock with 2 of 5 masters stopped: %v", took)
	require.Less(t, took, time.Second, "Unlock waited for the stopped masters")
	require.Equal(t, zeros(3), ms.existsOn(t, "stop:unlock", 2, 3, 4))

	resume0()
	resume1()
	require.NoError(t, rl.Drain(ctx))
	require.Equal(t, zeros(5), ms.existsOn(t, "stop:unlock", ms.all()...), "released once they resumed")
}

// TestLockWithStalledMembersReturnsOnQuorum: two of five masters are
// stopped; Lock returns once the three others are won, far within the
// node timeout, and what the stalled attempts take once their masters
// resume is given back.
func TestLockWithStalledMembersReturnsOnQuorum(t *testing.T) {
	ctx := ctxT(t)
	ms, cs := patientMasters(t, ctx, 5)
	const nodeTimeout = 5 * time.Second
	rl := redlock.New(mutexes(cs, "stop:lock"), redlock.WithNodeTimeout(nodeTimeout), redlock.WithUnlockTimeout(10*time.Second))

	resume0, resume1 := ms.stop(t, 0), ms.stop(t, 1)
	start := time.Now()
	held, err := rl.Lock(ctx)
	took := time.Since(start)
	require.NoError(t, err)
	t.Logf("Lock with 2 of 5 masters stopped: %v (node timeout %v)", took, nodeTimeout)
	require.Less(t, took, nodeTimeout/2, "Lock waited for the stopped masters")
	require.Equal(t, ones(3), ms.existsOn(t, "stop:lock", 2, 3, 4))
	require.NoError(t, rl.Unlock(held))

	resume0()
	resume1()
	require.NoError(t, rl.Drain(ctx))
	require.Equal(t, zeros(5), ms.existsOn(t, "stop:lock", ms.all()...), "the late grants were given back")
}

// TestMultiLockWithStalledMember: a multi-lock needs every member, so a
// stopped one fails TryLock after the node timeout, and the member it
// took elsewhere is given back.
func TestMultiLockWithStalledMember(t *testing.T) {
	ctx := ctxT(t)
	ms, cs := patientMasters(t, ctx, 2)
	ml := redlock.NewMulti([]redlock.Member{lock.New(cs[0], "acct:1"), lock.New(cs[1], "acct:2")},
		redlock.WithNodeTimeout(200*time.Millisecond), redlock.WithUnlockTimeout(10*time.Second))
	resume := ms.stop(t, 1)
	start := time.Now()
	_, err := ml.TryLock(ctx)
	t.Logf("multi-lock TryLock with a member stopped: %v after %v", err, time.Since(start))
	require.ErrorIs(t, err, redlock.ErrNotAcquired)
	require.Less(t, time.Since(start), 5*time.Second)
	require.Eventually(t, func() bool { return ms.exists(t, 0, "acct:1") == 0 }, 5*time.Second, time.Millisecond,
		"the member won was given back")
	resume()
	require.NoError(t, ml.Drain(ctx))
	require.Zero(t, ms.exists(t, 1, "acct:2"), "the late grant was given back")
}

// TestLostMultiLockReleasesSurvivors: a multi-lock's key is deleted on one
// master; once the watchdog reports the loss, the other resource is given
// back at once instead of staying taken for up to a lease.
func TestLostMultiLockReleasesSurvivors(t *testing.T) {
	redistest.RequireRedisServer(t)
	ctx := ctxT(t)
	ms := startMasters(t, 2)
	cs := ms.process(t)
	const lease = 3 * time.Second
	ml := redlock.NewMulti([]redlock.Member{lock.New(cs[0], "res:a"), lock.New(cs[1], "res:b")},
		redlock.WithWatchdogTimeout(lease))
	held, err := ml.Lock(ctx)
	require.NoError(t, err)
	require.NoError(t, ms.admins[0].Del(ctx, "res:a").Err())
	waitDone(t, held, 3*lease)
	lostAt := time.Now()
	require.ErrorIs(t, context.Cause(held), redlock.ErrLockLost)
	require.Eventually(t, func() bool { return ms.exists(t, 1, "res:b") == 0 }, lease/3, time.Millisecond,
		"the surviving member is still taken")
	t.Logf("surviving member released %v after the loss was reported", time.Since(lostAt))
	require.ErrorIs(t, ml.Unlock(held), redlock.ErrLockLost)
	require.NoError(t, ml.Drain(ctx))
}

// TestLateGiveBackCannotUndoNextHold: every round of a fresh acquisition
// has its own owner on the members, so a give-back of an earlier hold
// that reaches a member late (sent before, run after the next Lock) finds
// nothing of its own and leaves the next hold of the same caller alone.
func TestLateGiveBackCannotUndoNextHold(t *testing.T) {
	redistest.RequireRedisServer(t)
	ctx := ctxT(t)
	ms := startMasters(t, 3)
	cs := ms.process(t)
	members := mutexes(cs, "late")
	rl := redlock.New(members)
	first, err := rl.Lock(ctx)
	require.NoError(t, err)
	firstID, _ := core.Owner(first)
	require.NoError(t, rl.Unlock(first))
	require.NoError(t, rl.Drain(ctx))

	next, err := rl.Lock(ctx) // the same caller, the same ctx
	require.NoError(t, err)
	nextID, _ := core.Owner(next)
	require.NotEqual(t, firstID, nextID, "one owner per hold on the members")

	// The first hold's give-back arrives now, on every member.
	for _, m := range members {
		node, err := core.MemberOf(m)
		require.NoError(t, err)
		released, err := node.Release(ctx, firstID, time.Second)
		require.NoError(t, err)
		require.False(t, released, "the late give-back found something of its own")
	}
	require.Equal(t, ones(3), ms.existsOn(t, "late", ms.all()...), "the next hold is untouched")
	require.NoError(t, next.Err())

	// A re-entry still counts on the members under the hold's owner.
	inner, err := rl.Lock(next)
	require.NoError(t, err)
	innerID, _ := core.Owner(inner)
	require.Equal(t, nextID, innerID)
	require.NoError(t, rl.Unlock(inner))
	require.NoError(t, next.Err())
	require.NoError(t, rl.Unlock(next))
	require.NoError(t, rl.Drain(ctx))
	require.Equal(t, zeros(3), ms.existsOn(t, "late", ms.all()...))
}
