package redlock_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/lock"
	"github.com/relock-go/relock/redlock"
)

// boundSlack is how late past its bound a call may return: scheduling on
// a loaded machine, not a network wait.
const boundSlack = 100 * time.Millisecond

// TestCallsWithAStalledMemberReturnWithinTheNodeTimeout: one of three
// masters is stopped (SIGSTOP) while the Redlock is held, with clients
// that ignore context deadlines (go-redis's default): every call returns
// within the node timeout, decided on the quorum.
func TestCallsWithAStalledMemberReturnWithinTheNodeTimeout(t *testing.T) {
	ctx := ctxT(t)
	ms := startMasters(t, 3)
	cs := ms.process(t)
	for _, c := range cs {
		require.NoError(t, c.Ping(ctx).Err())
	}
	const nodeTimeout = 250 * time.Millisecond
	rl := redlock.New(mutexes(cs, "bound:rl"), redlock.WithNodeTimeout(nodeTimeout))
	held, err := rl.Lock(ctx)
	require.NoError(t, err)
	resume := ms.stop(t, 0)

	timed := func(op string, call func() error) error {
		start := time.Now()
		err := call()
		took := time.Since(start)
		t.Logf("%s with 1 of 3 masters stopped: %v (%v)", op, took.Round(time.Millisecond), err)
		assert.LessOrEqual(t, took, nodeTimeout+boundSlack, "%s took %v", op, took)
		return err
	}
	assert.NoError(t, timed("ttl", func() error {
		d, err := rl.TTL(ctx)
		assert.Positive(t, d, "a quorum holds it")
		return err
	}))
	assert.NoError(t, timed("unlock", func() error { return rl.Unlock(held) }))
	other := redlock.New(mutexes(cs, "bound:rl:2"), redlock.WithNodeTimeout(nodeTimeout))
	assert.NoError(t, timed("trylock", func() error {
		h, err := other.TryLock(ctx)
		if err == nil {
			require.NoError(t, other.Unlock(h))
		}
		return err
	}))
	resume()
	require.NoError(t, rl.Drain(ctx))
	require.NoError(t, other.Drain(ctx))
}

// TestFailedMultiLockGivesBackBeforeReturning: a multi-lock whose second
// member is held elsewhere fails, and the first member, which it won, is
// free again when TryLock returns: another process's TryLock of it a
// moment later succeeds.
func TestFailedMultiLockGivesBackBeforeReturning(t *testing.T) {
	ctx := ctxT(t)
	ms := startMasters(t, 2)
	cs := ms.process(t)
	elsewhere := ms.process(t)
	a, b := lock.New(cs[0], "bound:multi:a"), lock.New(cs[1], "bound:multi:b")
	bHeld, err := lock.New(elsewhere[1], "bound:multi:b").TryLock(ctx)
	require.NoError(t, err)
	defer func() { require.NoError(t, lock.New(elsewhere[1], "bound:multi:b").Unlock(bHeld)) }()

	multi := redlock.NewMulti([]redlock.Member{a, b})
	for range 20 {
		_, err := multi.TryLock(ctx)
		require.ErrorIs(t, err, redlock.ErrNotAcquired)
		aHeld, err := lock.New(elsewhere[0], "bound:multi:a").TryLock(ctx)
		require.NoError(t, err, "the member the failed multi-lock won was still held when TryLock returned")
		require.NoError(t, lock.New(elsewhere[0], "bound:multi:a").Unlock(aHeld))
	}
	require.NoError(t, multi.Drain(ctx))
}
