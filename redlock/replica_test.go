package redlock_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/testkit/redistest"
	"github.com/relock-go/relock/lock"
	"github.com/relock-go/relock/redlock"
)

// Each member syncs with its own master's replicas: a member whose
// replica is stalled is refused and given back, and the Redlock holds on
// the quorum of the others; with two of three stalled it gets no quorum.
// Replica options given to the Redlock itself are refused: they belong to
// the members, whose servers they concern.
func TestMembersReplicaSync(t *testing.T) {
	ctx := ctxT(t)
	groups := make([]*redistest.Replicated, 3)
	members := make([]redlock.Member, 3)
	for i := range groups {
		groups[i] = redistest.StartReplicated(t, 1)
		members[i] = lock.New(groups[i].Master.Client(t, fast), "job", lock.WithReplicaSync(200*time.Millisecond))
	}
	// A node timeout well above the WAIT's: on a loaded machine a member
	// whose WAIT ran its full 200 ms must still answer within it, with
	// the refusal rather than the node's timeout.
	rl := redlock.New(members, redlock.WithNodeTimeout(2*time.Second))
	held, err := rl.TryLock(ctx)
	require.NoError(t, err)
	require.NoError(t, rl.Unlock(held))
	require.NoError(t, rl.Drain(ctx)) // Unlock returns once a quorum released

	groups[0].Replicas[0].Pause(t)
	held, err = rl.TryLock(ctx)
	require.NoError(t, err, "the quorum of the two others")
	// The refused member answers after the quorum decided (its WAIT
	// runs out), and gives itself back then.
	admin := groups[0].Master.Client(t)
	require.Eventually(t, func() bool {
		n, err := admin.Exists(ctx, "job").Result()
		return err == nil && n == 0
	}, 5*time.Second, 10*time.Millisecond, "the refused member was given back")
	require.NoError(t, rl.Unlock(held))
	require.NoError(t, rl.Drain(ctx))

	groups[1].Replicas[0].Pause(t)
	_, err = rl.TryLock(ctx)
	require.ErrorIs(t, err, redlock.ErrNotAcquired)
	require.ErrorIs(t, err, redlock.ErrNotReplicated)
	for i, g := range groups {
		admin := g.Master.Client(t)
		require.Eventually(t, func() bool {
			n, err := admin.Exists(ctx, "job").Result()
			return err == nil && n == 0
		}, 5*time.Second, 10*time.Millisecond, "nothing left on master %d", i)
	}

	// Replica sync is set on each member, whose server it concerns: a
	// Redlock does not offer it, and package lock's option is not one.
	_, isRedlock := any(lock.WithReplicaSync(0)).(redlock.Option)
	require.False(t, isRedlock)
}
