package doctor_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/relock-go/relock/cmd/relock/internal/doctor"
	"github.com/relock-go/relock/cmd/relock/internal/minacl"
	"github.com/relock-go/relock/internal/testkit/redistest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(redistest.Main(m)) }

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// only returns the one finding of check on node ("" for any node).
func only(t *testing.T, rep doctor.Report, node, check string) doctor.Finding {
	t.Helper()
	fs := all(rep, node, check)
	require.Len(t, fs, 1, "findings of %s on %q in %+v", check, node, rep.Findings)
	return fs[0]
}

func all(rep doctor.Report, node, check string) []doctor.Finding {
	var out []doctor.Finding
	for _, f := range rep.Findings {
		if f.Check == check && (node == "" || f.Node == node) {
			out = append(out, f)
		}
	}
	return out
}

// server starts a redis-server with args and checks it.
func server(t *testing.T, cfg doctor.Config, args ...string) (doctor.Report, *redistest.Server) {
	t.Helper()
	s := redistest.StartServer(t, redistest.WithArgs(args...))
	rep := doctor.CheckServer(testCtx(t), s.Client(t), cfg)
	return rep, s
}

func TestEvictionPolicyThatCanEvictHeldLocksIsAnError(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want doctor.Severity
		says string
	}{
		{[]string{"--maxmemory", "2mb", "--maxmemory-policy", "noeviction"}, doctor.OK, "never evicts a held lock"},
		{[]string{"--maxmemory", "2mb", "--maxmemory-policy", "allkeys-lru"}, doctor.Error, "evicts any key"},
		{[]string{"--maxmemory", "2mb", "--maxmemory-policy", "volatile-lru"}, doctor.Error, "every key relock writes has one"},
		{[]string{"--maxmemory", "2mb", "--maxmemory-policy", "volatile-ttl"}, doctor.Error, "held locks go first"},
		{[]string{"--maxmemory", "0", "--maxmemory-policy", "allkeys-lru"}, doctor.OK, "no limit"},
	} {
		t.Run(strings.Join(tc.args[1:], "-"), func(t *testing.T) {
			rep, _ := server(t, doctor.Config{}, tc.args...)
			f := only(t, rep, "", "eviction")
			require.Equal(t, tc.want, f.Severity, f.Message)
			require.Contains(t, f.Message, tc.says)
			if tc.want == doctor.Error {
				require.Contains(t, f.Fix, "CONFIG SET maxmemory-policy noeviction")
				require.Equal(t, doctor.Error, rep.Worst)
			}
		})
	}
}

func TestPersistenceSaysWhatARestartForgets(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want doctor.Severity
		says string
	}{
		{"none", []string{"--appendonly", "no", "--save", ""}, doctor.Warn, "no persistence"},
		{"rdb", []string{"--appendonly", "no", "--save", "900 1"}, doctor.Warn, "RDB snapshots only"},
		{"aof-everysec", []string{"--appendonly", "yes", "--appendfsync", "everysec"}, doctor.Info, "up to a second"},
		{"aof-always", []string{"--appendonly", "yes", "--appendfsync", "always"}, doctor.OK, "survives a restart"},
		{"aof-no", []string{"--appendonly", "yes", "--appendfsync", "no"}, doctor.Warn, "appendfsync no"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep, _ := server(t, doctor.Config{}, tc.args...)
			f := only(t, rep, "", "persistence")
			require.Equal(t, tc.want, f.Severity, f.Message)
			require.Contains(t, f.Message, tc.says)
			if tc.want == doctor.Warn {
				require.Contains(t, f.Fix, "appendfsync everysec")
			}
		})
	}
}

func TestReplicasAndMinReplicasToWrite(t *testing.T) {
	ctx := testCtx(t)
	rep, _ := server(t, doctor.Config{})
	f := only(t, rep, "", "replicas")
	require.Equal(t, doctor.Info, f.Severity)
	require.Contains(t, f.Message, "no replicas")

	g := redistest.StartReplicated(t, 1)
	if g == nil {
		return
	}
	master := g.Master.Client(t)
	f = only(t, doctor.CheckServer(ctx, master, doctor.Config{}), "", "replicas")
	require.Equal(t, doctor.Info, f.Severity, f.Message)
	require.Contains(t, f.Message, "1 replicas online, min-replicas-to-write 0")
	require.Contains(t, f.Message, "WAIT")

	require.NoError(t, master.ConfigSet(ctx, "min-replicas-to-write", "1").Err())
	f = only(t, doctor.CheckServer(ctx, master, doctor.Config{}), "", "replicas")
	require.Equal(t, doctor.OK, f.Severity, f.Message)

	require.NoError(t, master.ConfigSet(ctx, "min-replicas-to-write", "2").Err())
	f = only(t, doctor.CheckServer(ctx, master, doctor.Config{}), "", "replicas")
	require.Equal(t, doctor.Error, f.Severity, f.Message)
	require.Contains(t, f.Message, "NOREPLICAS")

	// The replica given alone: relock cannot write there.
	f = only(t, doctor.CheckServer(ctx, g.Replicas[0].Client(t), doctor.Config{}), "", "replicas")
	require.Equal(t, doctor.Warn, f.Severity, f.Message)
	require.Contains(t, f.Message, "is a replica of "+g.Master.Addr)
}

// aclUser creates user with the union of every primitive's minimal ACL
// for names beginning with doctor.DefaultName, less the commands in drop.
func aclUser(t *testing.T, c *redis.Client, user string, cluster bool, drop ...string) {
	t.Helper()
	var acls []minacl.ACL
	for _, p := range minacl.Primitives {
		acls = append(acls, minacl.For(p, doctor.DefaultName, minacl.Deployment{Cluster: cluster, ReplicaSync: true}))
	}
	u := minacl.Union("all", acls...)
	ctx := testCtx(t)
	args := []any{"acl", "setuser", user, "reset", "on", ">pw"}
	for _, r := range u.Rules() {
		if !strings.HasPrefix(r, "+") {
			args = append(args, r)
		}
	}
	require.NoError(t, c.Do(ctx, args...).Err())
	// One command at a time: a command newer than the server (CLIENT
	// SETINFO came with 7.2) is refused, and the client never sends it.
	for _, cmd := range u.Commands {
		err := c.Do(ctx, "acl", "setuser", user, "+"+cmd).Err()
		if err != nil && !strings.Contains(err.Error(), "Unknown command") {
			require.NoError(t, err)
		}
	}
	for _, d := range drop {
		require.NoError(t, c.Do(ctx, "acl", "setuser", user, "-"+d).Err())
	}
}

func TestACLNamesWhatEachPrimitiveLacks(t *testing.T) {
	ctx := testCtx(t)
	s := redistest.StartServer(t)
	if s == nil {
		return
	}
	admin := s.Client(t)
	aclUser(t, admin, "app", false)
	aclUser(t, admin, "nopub", false, "publish")

	rep := doctor.CheckServer(ctx, admin, doctor.Config{ACLUser: "app"})
	fs := all(rep, "", "acl")
	require.Len(t, fs, len(minacl.Primitives))
	for _, f := range fs {
		require.Equal(t, doctor.OK, f.Severity, f.Message)
		require.Contains(t, f.Message, `user "app" may run every command`)
	}

	rep = doctor.CheckServer(ctx, admin, doctor.Config{ACLUser: "nopub"})
	fs = all(rep, "", "acl")
	require.Len(t, fs, len(minacl.Primitives))
	for i, f := range fs {
		require.Equal(t, doctor.Error, f.Severity, f.Message)
		require.True(t, strings.HasPrefix(f.Message, string(minacl.Primitives[i])+": "), f.Message)
		require.Contains(t, f.Message, "command publish")
		require.Contains(t, f.Fix, "ACL SETUSER nopub +publish")
	}
	require.Equal(t, doctor.Error, rep.Worst)

	// A lock name outside the user's key patterns: the keys are named.
	rep = doctor.CheckServer(ctx, admin, doctor.Config{ACLUser: "app", Name: "other:1"})
	f := all(rep, "", "acl")[0]
	require.Equal(t, doctor.Error, f.Severity, f.Message)
	require.Contains(t, f.Message, "keys other:1")
	require.Contains(t, f.Message, "channel redisson_lock__channel:{other:1}")
}

func TestACLWithoutDryRunProbesReadsAsTheUser(t *testing.T) {
	ctx := testCtx(t)
	s := redistest.StartServer(t)
	if s == nil {
		return
	}
	aclUser(t, s.Client(t), "app", false, "time")
	app := s.Client(t, func(o *redis.Options) { o.Username, o.Password = "app", "pw" })

	rep := doctor.CheckServer(ctx, app, doctor.Config{})
	f := only(t, rep, "", "acl")
	require.Equal(t, doctor.Error, f.Severity, f.Message)
	require.Contains(t, f.Message, "could not check the permissions with ACL DRYRUN")
	require.Contains(t, f.Message, "may not use time")
	require.Equal(t, doctor.Warn, only(t, rep, "", "clock").Severity)
	// The user may run INFO: what relock reads from it is checked.
	require.Equal(t, doctor.OK, only(t, rep, "", "eviction").Severity)
}

func TestClockSkewAboveTheThresholdWarns(t *testing.T) {
	mr := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	ctx := testCtx(t)

	f := only(t, doctor.CheckServer(ctx, rdb, doctor.Config{}), "", "clock")
	require.Equal(t, doctor.OK, f.Severity, f.Message)

	mr.SetTime(time.Now().Add(3 * time.Second))
	f = only(t, doctor.CheckServer(ctx, rdb, doctor.Config{}), "", "clock")
	require.Equal(t, doctor.Warn, f.Severity, f.Message)
	require.Contains(t, f.Message, "ahead of this machine's")
	require.Contains(t, f.Message, "expire early")

	mr.SetTime(time.Now().Add(-3 * time.Second))
	f = only(t, doctor.CheckServer(ctx, rdb, doctor.Config{Skew: 5 * time.Second}), "", "clock")
	require.Equal(t, doctor.OK, f.Severity, f.Message)
	require.Contains(t, f.Message, "behind")
}

func TestMiniredisIsCouldNotReadNeverOK(t *testing.T) {
	mr := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	rep := doctor.CheckServer(testCtx(t), rdb, doctor.Config{})
	for _, check := range []string{"eviction", "persistence", "replicas"} {
		f := only(t, rep, "", check)
		require.Equal(t, doctor.Warn, f.Severity, f.Message)
		require.Contains(t, f.Message, "could not read")
	}
	require.Contains(t, only(t, rep, "", "version").Message, "could not read")
	require.Contains(t, only(t, rep, "", "acl").Message, "could not check")
	require.Equal(t, doctor.Warn, rep.Worst)
}

func TestUnreachableServerIsAnError(t *testing.T) {
	mr := miniredis.RunT(t)
	addr := mr.Addr()
	mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: time.Second})
	t.Cleanup(func() { _ = rdb.Close() })
	rep := doctor.CheckServer(testCtx(t), rdb, doctor.Config{})
	f := only(t, rep, addr, "connection")
	require.Equal(t, doctor.Error, f.Severity)
	require.Len(t, rep.Findings, 1)
}

func TestSentinelChecksTheMasterAndItsReplica(t *testing.T) {
	_, g := redistest.StartSentinel(t, redistest.WithArgs("--maxmemory", "2mb", "--maxmemory-policy", "allkeys-lfu"))
	if g == nil {
		return
	}
	rep := doctor.CheckSentinel(testCtx(t), []string{"127.0.0.1:1", g.Sentinel.Addr}, redistest.SentinelMasterName, redis.Options{}, doctor.Config{})
	f := all(rep, "", "sentinel")[0]
	require.Equal(t, doctor.Info, f.Severity)
	require.Contains(t, f.Message, "at "+g.Master.Addr)
	require.Equal(t, doctor.Error, only(t, rep, g.Master.Addr, "eviction").Severity)
	require.Equal(t, doctor.Error, only(t, rep, g.Replica.Addr, "eviction").Severity)
	require.Contains(t, only(t, rep, g.Master.Addr, "replicas").Message, "1 replicas online")
	f = only(t, rep, g.Replica.Addr, "replicas")
	require.Equal(t, doctor.OK, f.Severity, f.Message)
	require.Contains(t, f.Message, "replica of "+g.Master.Addr+", link up")

	rep = doctor.CheckSentinel(testCtx(t), []string{g.Sentinel.Addr}, "nosuch", redis.Options{}, doctor.Config{})
	require.Equal(t, doctor.Error, only(t, rep, "", "sentinel").Severity)
	require.Len(t, rep.Findings, 1)
}

func TestClusterChecksEveryMaster(t *testing.T) {
	cc, servers := redistest.StartCluster(t, 3)
	if cc == nil {
		return
	}
	ctx := testCtx(t)
	aclUser(t, servers[0].Client(t), "app", true)
	rep := doctor.CheckCluster(ctx, cc, doctor.Config{})
	require.Contains(t, only(t, rep, "cluster", "cluster").Message, "3 masters")
	for _, s := range servers {
		f := only(t, rep, s.Addr, "version")
		require.Equal(t, doctor.Info, f.Severity, f.Message)
		require.Contains(t, f.Message, "cluster")
		require.Len(t, all(rep, s.Addr, "acl"), len(minacl.Primitives))
	}
	// The cluster's user needs sharded pub/sub; a user set up on one node
	// only is missing on the others.
	rep = doctor.CheckCluster(ctx, cc, doctor.Config{ACLUser: "app"})
	for _, f := range all(rep, servers[0].Addr, "acl") {
		require.Equal(t, doctor.OK, f.Severity, f.Message)
	}
	f := all(rep, servers[1].Addr, "acl")[0]
	require.Equal(t, doctor.Info, f.Severity, f.Message)
	require.Contains(t, f.Message, `could not check user "app"`)

	// A cluster node checked alone is pointed at --cluster.
	f = only(t, doctor.CheckServer(ctx, servers[0].Client(t), doctor.Config{}), "", "version")
	require.Contains(t, f.Fix, "--cluster")
}

func TestReportJSONRoundTrips(t *testing.T) {
	rep, _ := server(t, doctor.Config{}, "--maxmemory", "2mb", "--maxmemory-policy", "allkeys-random")
	var buf bytes.Buffer
	require.NoError(t, rep.WriteJSON(&buf))
	var back doctor.Report
	require.NoError(t, json.Unmarshal(buf.Bytes(), &back))
	require.Equal(t, rep, back)
	require.Contains(t, buf.String(), `"severity": "error"`)
	require.Contains(t, buf.String(), `"worst": "error"`)

	buf.Reset()
	require.NoError(t, rep.WriteText(&buf))
	require.Contains(t, buf.String(), "[error] eviction: maxmemory-policy allkeys-random")
	require.Contains(t, buf.String(), "        fix: CONFIG SET maxmemory-policy noeviction")
	require.Regexp(t, `\n1 error, 1 warn, \d info, \d+ ok\n$`, buf.String())
}
