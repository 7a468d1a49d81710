package scripts_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/conn"
	"github.com/relock-go/relock/internal/errs"
	"github.com/relock-go/relock/internal/scripts"
	"github.com/relock-go/relock/internal/testkit/redistest"
)

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// calls is how many times the server ran cmd, before this INFO itself.
func calls(t *testing.T, ctx context.Context, c *redis.Client, cmd string) int {
	t.Helper()
	n, err := redistest.CommandCalls(ctx, c, cmd)
	require.NoError(t, err)
	return n
}

var policy = scripts.ReplicaPolicy{Timeout: 500 * time.Millisecond, Min: 1}

func TestParse(t *testing.T) {
	info := "# Replication\r\nrole:master\r\nconnected_slaves:3\r\n" +
		"slave0:ip=127.0.0.1,port=7001,state=online,offset=42,lag=0\r\n" +
		"slave1:ip=127.0.0.1,port=7002,state=wait_bgsave,offset=0,lag=0\r\n" +
		"slave2:ip=127.0.0.1,port=7003,state=online,offset=42,lag=1\r\n" +
		"master_failover_state:no-failover\r\n"
	online, pending := scripts.ParseReplicas(info)
	require.Equal(t, 2, online, "only online replicas are waited for")
	require.True(t, pending, "one more is syncing")
	online, pending = scripts.ParseReplicas("# Replication\r\nrole:slave\r\nmaster_host:127.0.0.1\r\n")
	require.Zero(t, online)
	require.False(t, pending)
	online, pending = scripts.ParseReplicas("# Replication\r\nrole:master\r\nconnected_slaves:0\r\n")
	require.Zero(t, online)
	require.False(t, pending)
	// A replica counted as connected before INFO lists its line.
	_, pending = scripts.ParseReplicas("# Replication\r\nrole:master\r\nconnected_slaves:1\r\n")
	require.True(t, pending)

	require.Equal(t, 2, scripts.ParseRole([]any{"master", int64(42), []any{
		[]any{"127.0.0.1", "7001", "42"}, []any{"127.0.0.1", "7002", "40"}}}))
	require.Zero(t, scripts.ParseRole([]any{"slave", "127.0.0.1", int64(7000), "connected", int64(42)}))
	require.Zero(t, scripts.ParseRole(nil))
}

func TestPolicy(t *testing.T) {
	require.True(t, policy.Enough(scripts.Acks{}), "no WAIT sent: enough")
	require.True(t, policy.Enough(scripts.Acks{Want: 2, Got: 1}))
	require.False(t, policy.Enough(scripts.Acks{Want: 1, Got: 0}))
	two := scripts.ReplicaPolicy{Timeout: time.Second, Min: 2}
	require.False(t, two.Enough(scripts.Acks{Want: 1, Got: 1}), "fewer replicas than required: never enough")
	err := two.Err(scripts.Acks{Want: 1, Got: 1})
	require.ErrorIs(t, err, errs.ErrNotReplicated)
	require.ErrorIs(t, err, errs.ErrNotAcquired)
	require.True(t, conn.Transient(err), "a waiter tries again")
	require.False(t, conn.MayHaveRun(err), "the acquisition was given back")
}

// Off, or on a server without replicas, Synced is the script alone; on
// miniredis, which answers neither INFO replication nor ROLE, too.
func TestNoReplica(t *testing.T) {
	ctx := ctxT(t)
	for _, b := range redistest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			env := b.New(t)
			for _, p := range []scripts.ReplicaPolicy{{}, policy} {
				cmd, acks := setScript.With(1, "k", "v").Synced(ctx, conn.Of(env.Client), p)
				require.NoError(t, cmd.Err())
				require.Equal(t, scripts.Acks{}, acks)
			}
			if env.Server != nil {
				require.Zero(t, calls(t, ctx, env.Client, "wait"))
			}
		})
	}
}

// The count is learned once per server, and read again every refresh
// period in a call's own round trip: a replica attached later is waited
// for from then on, and one that stops answering makes the count stale,
// so the next call asks the server again.
func TestCountLearnedAndRefreshed(t *testing.T) {
	ctx := ctxT(t)
	g := redistest.StartReplicated(t, 0)
	c := g.Master.Client(t)
	admin := g.Master.Client(t)
	infos := calls(t, ctx, admin, "info") // the start's own

	// Each reading is two INFOs (replication, memory: Redis 6 takes one
	// section a call), on one round trip.
	for range 3 {
		_, acks := setScript.With(1, "k", "v").Synced(ctx, conn.Of(c), policy)
		require.Zero(t, acks.Want)
	}
	require.Equal(t, infos+3, calls(t, ctx, admin, "info"), "asked once, replication and memory (and counted once)")

	r := redistest.StartServer(t, redistest.WithArgs("--replicaof", "127.0.0.1", strconv.Itoa(g.Master.Port)))
	g.Replicas = append(g.Replicas, r)
	g.WaitInSync(t, 20*time.Second)
	infos = calls(t, ctx, admin, "info")
	defer scripts.SetRefreshEvery(50 * time.Millisecond)()
	time.Sleep(100 * time.Millisecond)
	_, acks := setScript.With(1, "k", "v").Synced(ctx, conn.Of(c), policy) // carries the INFO
	require.Zero(t, acks.Want)
	require.Equal(t, infos+3, calls(t, ctx, admin, "info"), "asked in the call's round trip")
	_, acks = setScript.With(1, "k", "v").Synced(ctx, conn.Of(c), policy)
	require.Equal(t, scripts.Acks{Want: 1, Got: 1, Timeout: policy.Timeout}, acks)

	// A stalled replica: the WAIT times out short, and the count is read
	// anew by the next call.
	r.Pause(t)
	start := time.Now()
	_, acks = setScript.With(1, "k", "v").Synced(ctx, conn.Of(c), policy)
	require.Equal(t, scripts.Acks{Want: 1, Got: 0, Timeout: policy.Timeout}, acks)
	require.GreaterOrEqual(t, time.Since(start), policy.Timeout)
	r.Resume()
	g.WaitInSync(t, 20*time.Second)
	infos = calls(t, ctx, admin, "info")
	_, acks = setScript.With(1, "k", "v").Synced(ctx, conn.Of(c), policy)
	require.Equal(t, scripts.Acks{Want: 1, Got: 1, Timeout: policy.Timeout}, acks)
	require.Equal(t, infos+3, calls(t, ctx, admin, "info"), "the stale count asked again")
}

// On a cluster the WAIT goes to the master of the key's slot, through
// its node's connection.
func TestReplicaCountInCluster(t *testing.T) {
	ctx := ctxT(t)
	env := redistest.ClusterBackend().New(t)
	for _, key := range []string{"a", "b", "c", "{user1}:lock"} {
		cmd, acks := setScript.With(1, key, "v").Synced(ctx, conn.Of(env.Universal), policy)
		require.NoError(t, cmd.Err())
		require.Zero(t, acks.Want, "the test cluster's masters have no replicas")
		require.Equal(t, "v", env.Universal.Get(ctx, key).Val())
	}
}
