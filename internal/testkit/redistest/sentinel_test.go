package redistest

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestStartSentinel(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	start := time.Now()
	c, g := StartSentinel(t, WithArgs("--maxmemory", "10mb"))
	require.NotNil(t, c)
	require.NotNil(t, g)
	t.Logf("group ready in %v", time.Since(start))

	// Three distinct servers, with the roles StartSentinel promised.
	ports := map[int]bool{g.Master.Port: true, g.Replica.Port: true, g.Sentinel.Port: true}
	assert.Len(t, ports, 3)
	require.NoError(t, sentinelRoleIs(ctx, g.Master.Addr, "master"))
	require.NoError(t, sentinelRoleIs(ctx, g.Replica.Addr, "slave"))
	si, err := sentinelInfo(ctx, g.Sentinel.Addr, "server")
	require.NoError(t, err)
	assert.Equal(t, "sentinel", si["redis_mode"]+si["server_mode"]) // Valkey says server_mode
	conf, err := os.ReadFile(filepath.Join(g.Sentinel.Dir, "sentinel-"+strconv.Itoa(g.Sentinel.Port)+".conf"))
	require.NoError(t, err)
	assert.Contains(t, string(conf), "sentinel down-after-milliseconds relock 1000")
	addr, err := g.MasterAddr(ctx)
	require.NoError(t, err)
	assert.Equal(t, g.Master.Addr, addr)

	// opts reach both data nodes.
	for _, s := range []*Server{g.Master, g.Replica} {
		cfg, err := s.Client(t).ConfigGet(ctx, "maxmemory").Result()
		require.NoError(t, err)
		assert.Equal(t, "10485760", cfg["maxmemory"], s.Addr)
	}

	// The failover client writes to the master, and the replica follows.
	require.NoError(t, c.Set(ctx, "k", "v", 0).Err())
	v, err := g.Master.Client(t).Get(ctx, "k").Result()
	require.NoError(t, err)
	assert.Equal(t, "v", v)
	replica := g.Replica.Client(t)
	require.Eventually(t, func() bool {
		v, err := replica.Get(ctx, "k").Result()
		return err == nil && v == "v"
	}, 5*time.Second, 10*time.Millisecond, "the write reaches the replica")

	// A crash of the master: the sentinel promotes the replica, and the
	// same failover client follows it and keeps what was replicated.
	g.Master.Kill()
	killed := time.Now()
	to, err := g.WaitFailover(ctx, g.Master.Addr)
	require.NoError(t, err)
	t.Logf("failover to %s %v after the kill", to, time.Since(killed))
	assert.Equal(t, g.Replica.Addr, to)
	assert.Less(t, time.Since(killed), 15*time.Second)
	require.Eventually(t, func() bool {
		return c.Set(ctx, "after", "x", 0).Err() == nil
	}, 10*time.Second, 50*time.Millisecond, "the failover client writes to the new master")
	v, err = replica.Get(ctx, "after").Result()
	require.NoError(t, err)
	assert.Equal(t, "x", v, "the write went to the promoted replica")
	v, err = c.Get(ctx, "k").Result()
	require.NoError(t, err)
	assert.Equal(t, "v", v)

	// Another client finds the new master through the sentinel from the start.
	other := g.NewClient(t, func(o *redis.FailoverOptions) { o.ClientName = "other" })
	v, err = other.Get(ctx, "after").Result()
	require.NoError(t, err)
	assert.Equal(t, "x", v)
}

// Not parallel: it changes PATH and CI for the whole process.
func TestStartSentinelFailsInCIWithoutRedisServer(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	t.Setenv("CI", "true")
	rec := &recordingTB{TB: t}
	c, g := StartSentinel(rec)
	assert.Nil(t, c)
	assert.Nil(t, g)
	assert.Empty(t, rec.skip)
	assert.Contains(t, rec.fatal, "redis-server not found")
}
