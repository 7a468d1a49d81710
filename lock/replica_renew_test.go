package lock_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/testkit/redistest"
	"github.com/relock-go/relock/lock"
)

// A synced hold's renewals count only once a replica acknowledged them,
// as its acquisition did: with its replica stalled, the holder is told
// ErrLockLost within its lease instead of believing in a lease a
// failover would not keep. A hold with replica sync off is renewed
// regardless.
func TestReplicaSyncedRenewalsNeedTheReplica(t *testing.T) {
	ctx := ctxT(t)
	g := redistest.StartReplicated(t, 1)
	c := g.Master.Client(t)
	const lease = 1500 * time.Millisecond
	const wait = 200 * time.Millisecond

	synced := lock.New(c, "synced", lock.WithWatchdogTimeout(lease), lock.WithReplicaSync(wait))
	unsynced := lock.New(c, "unsynced", lock.WithWatchdogTimeout(lease), lock.WithReplicaSync(0))
	held, err := synced.Lock(ctx)
	require.NoError(t, err)
	free, err := unsynced.Lock(ctx)
	require.NoError(t, err)

	g.Replicas[0].Pause(t)
	paused := time.Now()
	select {
	case <-held.Done():
		require.ErrorIs(t, context.Cause(held), lock.ErrLockLost)
		require.Less(t, time.Since(paused), 2*lease, "told within its lease")
	case <-time.After(4 * lease):
		t.Fatal("a synced hold kept renewing with its replica stalled")
	}
	require.NoError(t, free.Err(), "an unsynced hold is renewed without the replica")
	g.Replicas[0].Resume()
	g.WaitInSync(t, 20*time.Second)
	require.NoError(t, unsynced.Unlock(free))

	// Back in sync, a synced hold lives through several leases.
	held, err = synced.Lock(ctx)
	require.NoError(t, err)
	time.Sleep(3 * lease)
	require.NoError(t, held.Err())
	require.NoError(t, synced.Unlock(held))
}
