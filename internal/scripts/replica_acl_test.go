package scripts_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/conn"
	"github.com/relock-go/relock/internal/errs"
	"github.com/relock-go/relock/internal/scripts"
	"github.com/relock-go/relock/internal/testkit/redistest"
)

// aclUser makes a user of the server behind admin with rules (after
// "on >pw resetkeys resetchannels ~* &* +@all") and returns a client
// that logs in as it.
func aclUser(t *testing.T, ctx context.Context, admin *redis.Client, name string, rules ...string) *redis.Client {
	t.Helper()
	args := []any{"acl", "setuser", name, "reset", "on", ">pw", "~*", "&*", "+@all"}
	for _, r := range rules {
		args = append(args, r)
	}
	require.NoError(t, admin.Do(ctx, args...).Err())
	c := redis.NewClient(&redis.Options{Addr: admin.Options().Addr, Username: name, Password: "pw"})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// A user refused INFO and ROLE cannot learn whether the server has
// replicas: the call fails, naming what to grant, and writes nothing,
// instead of going on as if there were none.
func TestCountDeniedFailsTheCall(t *testing.T) {
	ctx := ctxT(t)
	g := redistest.StartReplicated(t, 1)
	admin := g.Master.Client(t)
	c := aclUser(t, ctx, admin, "noinfo", "-info", "-role")

	cmd, acks := setScript.With(1, "k", "v").Synced(ctx, conn.Of(c), policy)
	err := cmd.Err()
	require.Error(t, err)
	require.ErrorIs(t, err, scripts.ErrReplicaDenied)
	require.ErrorContains(t, err, "+info")
	require.ErrorContains(t, err, "WithReplicaSync(0)")
	require.ErrorContains(t, err, "NOPERM")
	require.False(t, conn.Transient(err), "a refusal does not pass with time")
	require.False(t, conn.MayHaveRun(err), "nothing was sent")
	require.Zero(t, acks.Want)
	require.Zero(t, admin.Exists(ctx, "k").Val(), "nothing written")

	// Off, the same user runs the script alone.
	cmd, _ = setScript.With(1, "k", "v").Synced(ctx, conn.Of(c), scripts.ReplicaPolicy{})
	require.NoError(t, cmd.Err())
}

// ROLE alone is enough to count the replicas where INFO is refused.
func TestRoleCountsWhereInfoIsDenied(t *testing.T) {
	ctx := ctxT(t)
	g := redistest.StartReplicated(t, 1)
	c := aclUser(t, ctx, g.Master.Client(t), "norinfo", "-info")
	cmd, acks := setScript.With(1, "k", "v").Synced(ctx, conn.Of(c), policy)
	require.NoError(t, cmd.Err())
	require.Equal(t, scripts.Acks{Want: 1, Got: 1, Timeout: policy.Timeout}, acks)
}

// A WAIT refused by the ACL is reported as the refusal it is, naming
// WAIT, not as replicas that did not acknowledge.
func TestWaitDeniedNamesWait(t *testing.T) {
	ctx := ctxT(t)
	g := redistest.StartReplicated(t, 1)
	c := aclUser(t, ctx, g.Master.Client(t), "nowait", "-wait")

	cmd, acks := setScript.With(1, "k", "v").Synced(ctx, conn.Of(c), policy)
	require.NoError(t, cmd.Err(), "the script ran")
	require.False(t, policy.Enough(acks))
	err := policy.Err(acks)
	require.ErrorIs(t, err, scripts.ErrReplicaDenied)
	require.ErrorContains(t, err, "+wait")
	require.ErrorContains(t, err, "NOPERM")
	require.NotErrorIs(t, err, errs.ErrNotReplicated, "not a replica that was slow: waiting will not help")
	require.NotContains(t, err.Error(), "too few replicas")
	undone := false
	require.ErrorIs(t, policy.Refuse(acks, func() error { undone = true; return nil }), scripts.ErrReplicaDenied)
	require.True(t, undone, "the acquisition is given back")
}

// A replica whose sync finishes after the count was first read is waited
// for within a second of coming online, not at the next 10 s refresh:
// while INFO shows it connected but not online, the count is read again
// in the round trip of the next call.
func TestSyncingReplicaCountedOnceOnline(t *testing.T) {
	ctx := ctxT(t)
	// The master waits 2 s before it sends its first replica the
	// snapshot: that replica is connected, in wait_bgsave, meanwhile.
	g := redistest.StartReplicated(t, 0, redistest.WithArgs("--repl-diskless-sync", "yes", "--repl-diskless-sync-delay", "2"))
	admin := g.Master.Client(t)
	require.NoError(t, admin.ConfigSet(ctx, "repl-diskless-sync-delay", "2").Err())
	c := g.Master.Client(t)
	r := redistest.StartServer(t, redistest.WithArgs("--replicaof", "127.0.0.1", itoa(g.Master.Port)))
	g.Replicas = append(g.Replicas, r)
	require.Eventually(t, func() bool {
		info := admin.Info(ctx, "replication").Val()
		online, pending := scripts.ParseReplicas(info)
		return online == 0 && pending
	}, 5*time.Second, 10*time.Millisecond, "the replica connects and waits for its snapshot")

	_, acks := setScript.With(1, "k", "v").Synced(ctx, conn.Of(c), policy)
	require.Zero(t, acks.Want, "no replica online yet")
	g.WaitInSync(t, 20*time.Second)
	online := time.Now()
	waits := calls(t, ctx, admin, "wait")
	for time.Since(online) < time.Second {
		_, acks = setScript.With(1, "k", "v").Synced(ctx, conn.Of(c), policy)
		if acks.Want > 0 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	require.Equal(t, scripts.Acks{Want: 1, Got: 1, Timeout: policy.Timeout}, acks, "waited for within a second of coming online")
	require.Equal(t, waits+1, calls(t, ctx, admin, "wait"))
}
