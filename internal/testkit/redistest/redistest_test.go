package redistest

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(Main(m))
}

func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// recordingTB records Fatalf and Skipf instead of ending the test, so the
// failure paths of the helpers can be checked. Everything else goes to the
// real test.
type recordingTB struct {
	testing.TB
	fatal, skip string
}

func (r *recordingTB) Helper() {}

func (r *recordingTB) Fatalf(format string, args ...any) {
	r.fatal = fmt.Sprintf(format, args...)
}

func (r *recordingTB) Skipf(format string, args ...any) {
	r.skip = fmt.Sprintf(format, args...)
}

func TestMiniredis(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	mr, c := Miniredis(t)

	require.NoError(t, c.Set(ctx, "k", "v", 0).Err())
	got, err := mr.Get("k")
	require.NoError(t, err)
	assert.Equal(t, "v", got)
}

func TestBackends(t *testing.T) {
	t.Parallel()
	backends := Backends()
	require.Len(t, backends, 2)
	assert.Equal(t, "miniredis", backends[0].Name)
	assert.Equal(t, "redis", backends[1].Name)

	for _, b := range backends {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			ctx := testContext(t)
			env := b.New(t)
			require.NotNil(t, env)
			require.NotNil(t, env.Client)
			assert.True(t, (env.Mini == nil) != (env.Server == nil), "exactly one of Mini and Server")

			require.NoError(t, env.Client.Set(ctx, "ttl", "v", 200*time.Millisecond).Err())
			require.NoError(t, env.Client.Set(ctx, "keep", "v", 0).Err())
			env.FastForward(400 * time.Millisecond)

			n, err := env.Client.Exists(ctx, "ttl", "keep").Result()
			require.NoError(t, err)
			assert.Equal(t, int64(1), n, "the key with a TTL expired, the other stayed")
		})
	}
}

func TestBackendsAreFresh(t *testing.T) {
	t.Parallel()
	for _, b := range Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			ctx := testContext(t)
			first, second := b.New(t), b.New(t)
			require.NoError(t, first.Client.Set(ctx, "k", "v", 0).Err())
			err := second.Client.Get(ctx, "k").Err()
			assert.ErrorIs(t, err, redis.Nil, "each New is a separate server")
		})
	}
}

func TestStartServers(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	servers := StartServers(t, 2)
	require.Len(t, servers, 2)
	s0, s1 := servers[0], servers[1]

	assert.NotEqual(t, s0.Port, s1.Port)
	assert.NotEqual(t, s0.Dir, s1.Dir)
	for _, s := range servers {
		assert.Equal(t, fmt.Sprintf("127.0.0.1:%d", s.Port), s.Addr)
		assert.Zero(t, s.BusPort)
		assert.FileExists(t, filepath.Join(s.Dir, fmt.Sprintf("redis-%d.log", s.Port)))
	}

	c0, c1 := s0.Client(t), s1.Client(t)
	require.NoError(t, c0.Set(ctx, "k", "zero", 0).Err())
	require.NoError(t, c1.Set(ctx, "k", "one", 0).Err())
	require.NoError(t, c0.Set(ctx, "only0", "x", 0).Err())

	v, err := c0.Get(ctx, "k").Result()
	require.NoError(t, err)
	assert.Equal(t, "zero", v)
	v, err = c1.Get(ctx, "k").Result()
	require.NoError(t, err)
	assert.Equal(t, "one", v)
	assert.ErrorIs(t, c1.Get(ctx, "only0").Err(), redis.Nil)

	// The servers run without persistence.
	cfg, err := c0.ConfigGet(ctx, "save").Result()
	require.NoError(t, err)
	assert.Empty(t, cfg["save"])
	cfg, err = c0.ConfigGet(ctx, "appendonly").Result()
	require.NoError(t, err)
	assert.Equal(t, "no", cfg["appendonly"])
}

func TestServerKillRestartStop(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	s := StartServer(t)
	c := s.Client(t)
	require.NoError(t, c.Set(ctx, "k", "v", 0).Err())

	s.Kill()
	// probe, not the client: go-redis would retry its dials for seconds.
	_, err := probe(s.Addr)
	assert.Error(t, err, "a killed server does not answer")
	s.Kill() // no-op when not running

	s.Restart(t)
	require.NoError(t, c.Ping(ctx).Err(), "the same client reconnects to the same port")
	assert.ErrorIs(t, c.Get(ctx, "k").Err(), redis.Nil, "nothing survives a restart")

	require.NoError(t, c.Set(ctx, "k", "v", 0).Err())
	s.Restart(t) // restarting a running server stops it first
	assert.ErrorIs(t, c.Get(ctx, "k").Err(), redis.Nil)

	s.Stop()
	s.Stop() // idempotent
	_, err = probe(s.Addr)
	assert.Error(t, err, "a stopped server does not answer")

	s.Restart(t)
	require.NoError(t, c.Ping(ctx).Err())
}

func TestWithArgs(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	s := StartServer(t, WithArgs("--maxmemory", "10mb"), WithStartTimeout(5*time.Second))
	cfg, err := s.Client(t).ConfigGet(ctx, "maxmemory").Result()
	require.NoError(t, err)
	assert.Equal(t, "10485760", cfg["maxmemory"])
}

// pickFirst returns a port picker that offers port first, then free ports.
func pickFirst(port int) ServerOption {
	offered := false
	return func(c *serverConfig) {
		c.pickPort = func() (int, error) {
			if !offered {
				offered = true
				return port, nil
			}
			return freePort()
		}
	}
}

func TestStartServerRetriesWhenPortTaken(t *testing.T) {
	t.Parallel()

	t.Run("by a listener", func(t *testing.T) {
		t.Parallel()
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		defer l.Close()
		taken := l.Addr().(*net.TCPAddr).Port

		s := StartServer(t, pickFirst(taken))
		assert.NotEqual(t, taken, s.Port)
		require.NoError(t, s.Client(t).Ping(testContext(t)).Err())
	})

	t.Run("by another redis-server", func(t *testing.T) {
		t.Parallel()
		ctx := testContext(t)
		other := StartServer(t)

		s := StartServer(t, pickFirst(other.Port))
		assert.NotEqual(t, other.Port, s.Port)
		require.NoError(t, s.Client(t).Set(ctx, "mine", "v", 0).Err())
		assert.ErrorIs(t, other.Client(t).Get(ctx, "mine").Err(), redis.Nil,
			"the new server is not the one that held the port")
	})
}

func TestStartServerReportsStartFailure(t *testing.T) {
	t.Parallel()
	RequireRedisServer(t)
	rec := &recordingTB{TB: t}
	servers := StartServers(rec, 1, WithArgs("--no-such-directive", "x"))
	assert.Nil(t, servers)
	assert.Contains(t, rec.fatal, "exited during start")
	assert.Contains(t, rec.fatal, "no-such-directive", "the error carries redis-server's own message")
}

func TestStartServersRejectsBadCount(t *testing.T) {
	t.Parallel()
	RequireRedisServer(t)
	rec := &recordingTB{TB: t}
	assert.Nil(t, StartServers(rec, 0))
	assert.Contains(t, rec.fatal, "n = 0")
}

// Not parallel: it changes PATH and CI for the whole process.
func TestRequireRedisServer(t *testing.T) {
	t.Run("found", func(t *testing.T) {
		path := RequireRedisServer(t)
		assert.True(t, filepath.IsAbs(path), path)
	})
	t.Run("missing outside CI", func(t *testing.T) {
		t.Setenv("PATH", t.TempDir())
		t.Setenv("CI", "")
		rec := &recordingTB{TB: t}
		assert.Empty(t, RequireRedisServer(rec))
		assert.Empty(t, rec.fatal)
		assert.Contains(t, rec.skip, "SKIPPING")
		assert.Contains(t, rec.skip, "make test")
		assert.Contains(t, rec.skip, "NOT counted as passing")
	})
	for _, ci := range []string{"true", "1", "TRUE"} {
		t.Run("missing in CI="+ci, func(t *testing.T) {
			t.Setenv("PATH", t.TempDir())
			t.Setenv("CI", ci)
			rec := &recordingTB{TB: t}
			assert.Empty(t, RequireRedisServer(rec))
			assert.Empty(t, rec.skip)
			assert.Contains(t, rec.fatal, "redis-server not found")
		})
	}
}

func findClient(infos []ClientInfo, name string) (ClientInfo, bool) {
	for _, ci := range infos {
		if ci.Name == name {
			return ci, true
		}
	}
	return ClientInfo{}, false
}

func TestClientListAndCountPubSubConns(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	s := StartServer(t)
	admin := s.Client(t)
	subs := s.Client(t, func(o *redis.Options) { o.ClientName = "subscriber" })

	n, err := CountPubSubConns(ctx, admin)
	require.NoError(t, err)
	assert.Zero(t, n, "the asking connection is not counted")

	infos, err := ClientList(ctx, admin)
	require.NoError(t, err)
	var self ClientInfo
	for _, ci := range infos {
		if ci.Cmd == "client|list" {
			self = ci
		}
	}
	assert.NotZero(t, self.ID)
	assert.NotEmpty(t, self.Addr)
	assert.True(t, self.HasFlag('N'))

	// Receive waits for the server's confirmation, so CLIENT LIST sees it.
	ps := subs.Subscribe(ctx, "ch1", "ch2")
	defer ps.Close()
	_, err = ps.Receive(ctx)
	require.NoError(t, err)
	sps := subs.SSubscribe(ctx, "{s}ch")
	defer sps.Close()
	_, err = sps.Receive(ctx)
	require.NoError(t, err)
	pps := subs.PSubscribe(ctx, "p*")
	defer pps.Close()
	_, err = pps.Receive(ctx)
	require.NoError(t, err)

	infos, err = ClientList(ctx, admin)
	require.NoError(t, err)
	var sub, ssub, psub int
	for _, ci := range infos {
		if ci.Name != "subscriber" {
			continue
		}
		assert.True(t, ci.IsPubSub(), "%+v", ci)
		assert.True(t, ci.HasFlag('P'), "%+v", ci)
		sub += ci.Sub
		ssub += ci.SSub
		psub += ci.PSub
	}
	assert.Equal(t, 2, sub)
	assert.Equal(t, 1, ssub)
	assert.Equal(t, 1, psub)

	n, err = CountPubSubConns(ctx, admin)
	require.NoError(t, err)
	assert.Equal(t, 3, n)

	require.NoError(t, ps.Close())
	require.NoError(t, sps.Close())
	require.NoError(t, pps.Close())
	assert.Eventually(t, func() bool {
		n, err := CountPubSubConns(ctx, admin)
		return err == nil && n == 0
	}, 5*time.Second, 10*time.Millisecond, "closed subscriptions leave no pub/sub connection")

	// A named connection that is not subscribed shows up as such.
	require.NoError(t, subs.Ping(ctx).Err())
	infos, err = ClientList(ctx, admin)
	require.NoError(t, err)
	ci, ok := findClient(infos, "subscriber")
	require.True(t, ok)
	assert.False(t, ci.IsPubSub())
}

func TestParseClientList(t *testing.T) {
	t.Parallel()
	const redis7 = "id=5 addr=127.0.0.1:41234 laddr=127.0.0.1:6379 fd=9 name=w age=1 idle=0 flags=P " +
		"db=2 sub=2 psub=1 ssub=3 multi=-1 qbuf=0 qbuf-free=0 argv-mem=0 multi-mem=0 rbs=1024 rbp=0 " +
		"obl=0 oll=0 omem=0 tot-mem=1800 events=r cmd=ssubscribe user=default redir=-1 resp=3\r\n" +
		"id=6 addr=127.0.0.1:41236 laddr=127.0.0.1:6379 fd=10 name= age=0 idle=0 flags=N db=0 sub=0 psub=0 cmd=client|list\n"

	infos, err := ParseClientList(redis7)
	require.NoError(t, err)
	require.Len(t, infos, 2)
	assert.Equal(t, ClientInfo{
		ID: 5, Addr: "127.0.0.1:41234", LAddr: "127.0.0.1:6379", Name: "w", Flags: "P", DB: 2,
		Sub: 2, SSub: 3, PSub: 1, Cmd: "ssubscribe", Fields: infos[0].Fields,
	}, infos[0])
	assert.Equal(t, "3", infos[0].Fields["resp"])
	assert.True(t, infos[0].IsPubSub())

	// An older server reports no ssub: it stays zero.
	assert.Equal(t, int64(6), infos[1].ID)
	assert.Empty(t, infos[1].Name)
	assert.Zero(t, infos[1].SSub)
	assert.False(t, infos[1].IsPubSub())

	// The flag alone marks a pub/sub connection.
	infos, err = ParseClientList("id=1 flags=P sub=0 psub=0\n")
	require.NoError(t, err)
	assert.True(t, infos[0].IsPubSub())

	infos, err = ParseClientList("")
	require.NoError(t, err)
	assert.Empty(t, infos)

	for _, bad := range []string{
		"id=x addr=a",
		"id=1 sub=many",
		"id=1 garbage",
		"addr=127.0.0.1:1 name=no-id",
	} {
		_, err := ParseClientList(bad)
		assert.Error(t, err, bad)
	}
}

func TestStartCluster(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	cc, servers := StartCluster(t, 3)
	require.NotNil(t, cc)
	require.Len(t, servers, 3)
	for _, s := range servers {
		assert.NotZero(t, s.BusPort)
		assert.FileExists(t, filepath.Join(s.Dir, fmt.Sprintf("nodes-%d.conf", s.Port)))
	}

	const keys = 30
	slots := make(map[int64]bool)
	for i := range keys {
		key := fmt.Sprintf("key:%d", i)
		require.NoError(t, cc.Set(ctx, key, i, 0).Err())
		slot, err := cc.ClusterKeySlot(ctx, key).Result()
		require.NoError(t, err)
		slots[slot] = true
	}
	for i := range keys {
		v, err := cc.Get(ctx, fmt.Sprintf("key:%d", i)).Int()
		require.NoError(t, err)
		assert.Equal(t, i, v)
	}
	assert.Greater(t, len(slots), 1, "the keys span several slots")

	// Every master took some of the keys: the slots are really spread.
	total := int64(0)
	for _, s := range servers {
		n, err := s.Client(t).DBSize(ctx).Result()
		require.NoError(t, err)
		assert.Positive(t, n, "master %s holds no key", s.Addr)
		total += n
	}
	assert.Equal(t, int64(keys), total)

	shards, err := cc.ClusterShards(ctx).Result()
	require.NoError(t, err)
	assert.Len(t, shards, 3)

	// Sharded pub/sub, which the lock notifications use on a cluster, works.
	ps := cc.SSubscribe(ctx, "{key:1}:ch")
	defer ps.Close()
	_, err = ps.Receive(ctx)
	require.NoError(t, err)
	require.NoError(t, cc.SPublish(ctx, "{key:1}:ch", "hi").Err())
	msg, err := ps.ReceiveMessage(ctx)
	require.NoError(t, err)
	assert.Equal(t, "hi", msg.Payload)
}

func TestStartClusterRejectsBadCount(t *testing.T) {
	t.Parallel()
	rec := &recordingTB{TB: t}
	cc, servers := StartCluster(rec, 0)
	assert.Nil(t, cc)
	assert.Nil(t, servers)
	assert.Contains(t, rec.fatal, "masters = 0")
}

func TestFreePortDoesNotRepeat(t *testing.T) {
	t.Parallel()
	seen := make(map[int]bool)
	for range 50 {
		p, err := freePort()
		require.NoError(t, err)
		require.False(t, seen[p], "port %d handed out twice", p)
		seen[p] = true
	}
}

func TestProbeRejectsNonRedis(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan struct{})
	go func() {
		defer close(done)
		conn, err := l.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		_, _ = conn.Write([]byte("HTTP/1.1 400 Bad Request\r\n\r\n"))
	}()
	_, err = probe(l.Addr().String())
	assert.Error(t, err)
	require.NoError(t, l.Close())
	<-done
}

// The log tail helps diagnose a server that would not start.
func TestLogTail(t *testing.T) {
	t.Parallel()
	s := &Server{Port: 1, Dir: t.TempDir()}
	assert.Empty(t, s.logTail())
	require.NoError(t, os.WriteFile(s.logFile(), []byte("boom\n"), 0o644))
	assert.Contains(t, s.logTail(), "boom")
	assert.True(t, s.logContains("boom"))
}

// The shared cluster: each Env starts from a flushed cluster with a client
// of its own, and has only the capabilities a cluster gives.
func TestClusterBackend(t *testing.T) {
	b := ClusterBackend()
	assert.Equal(t, "cluster", b.Name)
	assert.Equal(t, "cluster", AllBackends()[2].Name)
	t.Run("first", func(t *testing.T) {
		env := b.New(t)
		require.NotNil(t, env)
		assert.Nil(t, env.Client)
		assert.Len(t, env.Cluster, 3)
		assert.False(t, env.Has(SingleNode))
		assert.False(t, env.Has(ProcessControl))
		ctx := testContext(t)
		for i := range 20 {
			require.NoError(t, env.U().Set(ctx, fmt.Sprintf("k%d", i), i, 0).Err())
		}
		n, err := env.U().DBSize(ctx).Result()
		require.NoError(t, err)
		assert.EqualValues(t, 20, n)
		ks, _, err := Slots(ctx, env.U().(*redis.ClusterClient))
		require.NoError(t, err)
		assert.Len(t, ks, 20)
		other := env.NewClient(t)
		v, err := other.Get(ctx, "k7").Int()
		require.NoError(t, err)
		assert.Equal(t, 7, v)
	})
	t.Run("second", func(t *testing.T) {
		env := b.New(t)
		ctx := testContext(t)
		n, err := env.U().DBSize(ctx).Result()
		require.NoError(t, err)
		assert.Zero(t, n, "every master was flushed")
		// Sharded pub/sub through the helpers, as the primitives use it.
		ps, err := Subscribe(ctx, env.U(), "{k1}:ch")
		require.NoError(t, err)
		defer ps.Close()
		subs, err := env.Subscribers(ctx, "{k1}:ch")
		require.NoError(t, err)
		assert.EqualValues(t, 1, subs)
		require.NoError(t, Publish(ctx, env.U(), "{k1}:ch", "hi"))
		msg, err := ps.ReceiveMessage(ctx)
		require.NoError(t, err)
		assert.Equal(t, "hi", msg.Payload)
	})
	t.Run("nested New refused", func(t *testing.T) {
		env := b.New(t)
		require.NotNil(t, env)
		rec := &recordingTB{TB: t}
		done := make(chan *Env, 1)
		go func() { done <- b.New(rec) }()
		select {
		case got := <-done:
			assert.Nil(t, got)
			assert.Contains(t, rec.fatal, "one Env per test at a time")
		case <-time.After(10 * time.Second):
			t.Fatal("a second New in the same test waits forever")
		}
	})
}

func TestRequireSkipsWithReason(t *testing.T) {
	env := &Env{Cluster: []*Server{{}}}
	rec := &recordingTB{TB: t}
	env.Require(rec, SingleNode, "it counts connections with CLIENT LIST")
	assert.Contains(t, rec.skip, "cluster backend")
	assert.Contains(t, rec.skip, string(SingleNode))
	assert.Contains(t, rec.skip, "CLIENT LIST")
	single := &Env{Client: &redis.Client{}, Mini: nil, Server: &Server{}}
	assert.True(t, single.Has(SingleNode))
	assert.True(t, single.Has(ProcessControl))
	assert.False(t, single.Has(VirtualClock))
}
