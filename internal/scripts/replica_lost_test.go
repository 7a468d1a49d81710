package scripts_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/conn"
	"github.com/relock-go/relock/internal/errs"
	"github.com/relock-go/relock/internal/scripts"
	"github.com/relock-go/relock/internal/testkit/redistest"
)

// A master that showed a replica and then shows none (its replica
// promoted beside it, as in a failover that splits the deployment) is
// refused a synced write, which would be thrown away with its side of
// the split: the script does not run, the error is ErrNotReplicated, and
// writes are synced again once a replica is back. A server that never
// showed one is written without WAIT (TestNoReplica).
func TestMasterThatLostItsReplicaRefusesSyncedWrites(t *testing.T) {
	ctx := ctxT(t)
	g := redistest.StartReplicated(t, 1)
	c := g.Master.Client(t)
	admin := g.Master.Client(t)
	replica := g.Replicas[0].Client(t)

	cmd, acks := setScript.With(1, "before", "v").Synced(ctx, conn.Of(c), policy)
	require.NoError(t, cmd.Err())
	require.Equal(t, scripts.Acks{Want: 1, Got: 1, Timeout: policy.Timeout}, acks)

	require.NoError(t, replica.Do(ctx, "replicaof", "no", "one").Err())
	require.Eventually(t, func() bool {
		info, err := admin.Info(ctx, "replication").Result()
		return err == nil && strings.Contains(info, "connected_slaves:0")
	}, 10*time.Second, 10*time.Millisecond)

	// The count still says one: the WAIT finds none, and the count is
	// read again by the next call.
	_, acks = setScript.With(1, "short", "v").Synced(ctx, conn.Of(c), policy)
	require.Equal(t, scripts.Acks{Want: 1, Got: 0, Timeout: policy.Timeout}, acks)
	for range 2 {
		cmd, acks = setScript.With(1, "refused", "v").Synced(ctx, conn.Of(c), policy)
		require.ErrorIs(t, cmd.Err(), errs.ErrNotReplicated)
		require.ErrorIs(t, cmd.Err(), errs.ErrNotAcquired)
		require.False(t, conn.MayHaveRun(cmd.Err()), "the script did not run")
		require.Equal(t, scripts.Acks{}, acks)
	}
	n, err := admin.Exists(ctx, "refused").Result()
	require.NoError(t, err)
	require.Zero(t, n, "nothing written")
	require.True(t, scripts.SyncNeeded(ctx, conn.Of(c), policy, "refused"), "a hand-over inside a release is not made there either")

	require.NoError(t, replica.Do(ctx, "replicaof", "127.0.0.1", strconv.Itoa(g.Master.Port)).Err())
	g.WaitInSync(t, 20*time.Second)
	cmd, acks = setScript.With(1, "after", "v").Synced(ctx, conn.Of(c), policy)
	require.NoError(t, cmd.Err())
	require.Equal(t, scripts.Acks{Want: 1, Got: 1, Timeout: policy.Timeout}, acks)
}

// Renewals are planned as acquisitions are sent: a WAIT on the slot's
// master while it has replicas, acknowledged or not; none, and an
// error, once a master that had them has none.
func TestRenewalsSyncedLikeAcquisitions(t *testing.T) {
	ctx := ctxT(t)
	g := redistest.StartReplicated(t, 1)
	c := g.Master.Client(t)
	admin := g.Master.Client(t)

	plan := scripts.SyncRenewals(ctx, conn.Of(c), policy, "k")
	require.NoError(t, plan.Err)
	require.Equal(t, 1, plan.Want)
	set := conn.NewCmd(ctx, 1, "set", "k", "v", "px", 60000)
	wait := plan.Wait(ctx, policy.Timeout)
	plan.Node.Exec(ctx, set, wait)
	require.NoError(t, set.Reply().Err())
	require.NoError(t, wait.Reply().Err())
	require.NoError(t, plan.Acked(policy, wait))

	g.Replicas[0].Pause(t)
	set = conn.NewCmd(ctx, 1, "set", "k", "v", "px", 60000)
	wait = plan.Wait(ctx, 100*time.Millisecond)
	plan.Node.Exec(ctx, set, wait)
	require.ErrorIs(t, plan.Acked(policy, wait), errs.ErrNotReplicated)
	g.Replicas[0].Resume()

	require.NoError(t, g.Replicas[0].Client(t).Do(ctx, "replicaof", "no", "one").Err())
	require.Eventually(t, func() bool {
		info, err := admin.Info(ctx, "replication").Result()
		return err == nil && strings.Contains(info, "connected_slaves:0")
	}, 10*time.Second, 10*time.Millisecond)
	plan = scripts.SyncRenewals(ctx, conn.Of(c), policy, "k")
	require.ErrorIs(t, plan.Err, errs.ErrNotReplicated)
	require.ErrorIs(t, plan.Acked(policy, conn.Cmd{}), errs.ErrNotReplicated)
}

// A Sentinel client expects replicas from its first call: a process that
// first meets a master with none online (its replica gone, or not back
// after a failover) refuses a synced write, where a client of a server
// run alone would send the script without WAIT.
func TestSentinelClientExpectsReplicasFromTheStart(t *testing.T) {
	ctx := ctxT(t)
	_, g := redistest.StartSentinel(t)
	if g == nil {
		return
	}
	admin := g.Master.Client(t)
	g.Replica.Kill()
	require.Eventually(t, func() bool {
		info, err := admin.Info(ctx, "replication").Result()
		return err == nil && strings.Contains(info, "connected_slaves:0")
	}, 10*time.Second, 10*time.Millisecond)

	fresh := g.NewClient(t)
	cmd, acks := setScript.With(1, "k", "v").Synced(ctx, conn.Of(fresh), policy)
	require.ErrorIs(t, cmd.Err(), errs.ErrNotReplicated)
	require.Equal(t, scripts.Acks{}, acks)
	n, err := admin.Exists(ctx, "k").Result()
	require.NoError(t, err)
	require.Zero(t, n, "nothing written")

	plain := g.Master.Client(t)
	cmd, _ = setScript.With(1, "k", "v").Synced(ctx, conn.Of(plain), policy)
	require.NoError(t, cmd.Err(), "a plain client of the same server sees a server run alone")
}
