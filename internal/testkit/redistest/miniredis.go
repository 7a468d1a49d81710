package redistest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// Miniredis starts an embedded miniredis and returns it with a go-redis client
// pointed at it. Both are closed at t.Cleanup, the client first.
func Miniredis(t testing.TB) (*miniredis.Miniredis, *redis.Client) {
	t.Helper()
	mr, err := miniredis.Run()
	if err != nil {
		t.Fatalf("redistest: start miniredis: %v", err)
		return nil, nil
	}
	t.Cleanup(mr.Close)

	client := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	// Cleanups run last-in first-out, so the client closes before the server.
	t.Cleanup(func() { _ = client.Close() })
	return mr, client
}

// Env is one test environment: a client and the server behind it. Exactly one
// of Mini, Server and Cluster is set.
type Env struct {
	// Universal is the client behaviour tests use: Client on a single
	// server, a *redis.ClusterClient on the cluster. [Env.U] falls back to
	// Client for an Env built by hand.
	Universal redis.UniversalClient
	// Client is the client of a single server (miniredis or redis-server);
	// nil on the cluster. It stays a *redis.Client for the tests that need
	// one server (pool stats, CLIENT LIST): see [Env.Require].
	Client *redis.Client
	// Mini is the embedded server; nil on a real redis-server.
	Mini *miniredis.Miniredis
	// Server is the real redis-server process; nil on miniredis and the
	// cluster.
	Server *Server
	// Cluster holds the masters of the shared cluster; nil elsewhere. The
	// cluster outlives the test: do not kill or reconfigure its masters
	// (StartCluster gives a test a cluster of its own).
	Cluster []*Server
}

// U is the client of the Env: Universal, or Client when only that is set.
func (e *Env) U() redis.UniversalClient {
	if e.Universal != nil {
		return e.Universal
	}
	return e.Client
}

// FastForward lets d pass for the server's TTLs. Miniredis keeps TTLs on a
// virtual clock that only moves when told, so it is moved by d; a real
// redis-server expires keys on its own clock, so the caller sleeps for d.
func (e *Env) FastForward(d time.Duration) {
	if e.Mini != nil {
		e.Mini.FastForward(d)
		return
	}
	time.Sleep(d)
}

// NewClient returns another client of the same server or cluster, with its
// own connection pool (and so its own queue hub and batch pipe), as
// another process would have. It is closed at t.Cleanup.
func (e *Env) NewClient(t testing.TB) redis.UniversalClient {
	t.Helper()
	var c redis.UniversalClient
	switch {
	case e.Cluster != nil:
		c = NewClusterClient(e.Cluster)
	case e.Client != nil:
		c = redis.NewClient(&redis.Options{Addr: e.Client.Options().Addr})
	default:
		t.Fatalf("redistest: NewClient: the Env has no server")
		return nil
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// Subscribers counts the subscribers of a notification channel on env's
// server; see the package function [Subscribers].
func (e *Env) Subscribers(ctx context.Context, channel string) (int64, error) {
	return Subscribers(ctx, e.U(), channel)
}

// Subscribers counts the subscribers of a notification channel, on the
// kind of pub/sub the primitives use there: PUBSUB NUMSUB on one server,
// PUBSUB SHARDNUMSUB on the master that owns the channel's slot on a
// cluster (sharded pub/sub stays on that shard).
func Subscribers(ctx context.Context, c redis.UniversalClient, channel string) (int64, error) {
	cc, ok := c.(*redis.ClusterClient)
	if !ok {
		res, err := c.PubSubNumSub(ctx, channel).Result()
		return res[channel], err
	}
	node, err := cc.MasterForKey(ctx, channel)
	if err != nil {
		return 0, err
	}
	res, err := node.PubSubShardNumSub(ctx, channel).Result()
	return res[channel], err
}

// Keys returns the keys matching pattern, from every master on a cluster.
func Keys(ctx context.Context, c redis.UniversalClient, pattern string) ([]string, error) {
	cc, ok := c.(*redis.ClusterClient)
	if !ok {
		return c.Keys(ctx, pattern).Result()
	}
	var mu sync.Mutex
	var all []string
	err := cc.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
		ks, err := node.Keys(ctx, pattern).Result()
		mu.Lock()
		all = append(all, ks...)
		mu.Unlock()
		return err
	})
	return all, err
}

// Publish publishes on channel the way the primitives do on c: SPUBLISH on
// a cluster, PUBLISH elsewhere.
func Publish(ctx context.Context, c redis.UniversalClient, channel string, msg any) error {
	if _, ok := c.(*redis.ClusterClient); ok {
		return c.SPublish(ctx, channel, msg).Err()
	}
	return c.Publish(ctx, channel, msg).Err()
}

// Subscribe subscribes to channel the way the primitives' waiters do on c
// (SSUBSCRIBE on a cluster) and returns once the server confirmed it.
func Subscribe(ctx context.Context, c redis.UniversalClient, channel string) (*redis.PubSub, error) {
	var ps *redis.PubSub
	if _, ok := c.(*redis.ClusterClient); ok {
		ps = c.SSubscribe(ctx, channel)
	} else {
		ps = c.Subscribe(ctx, channel)
	}
	if _, err := ps.Receive(ctx); err != nil {
		_ = ps.Close()
		return nil, err
	}
	return ps, nil
}

// Capability is something a test needs beyond the Redis commands every
// backend serves. A test that cannot run without it calls [Env.Require],
// which skips it, with the reason, on a backend that lacks it.
type Capability string

const (
	// SingleNode: one server holds every key and connection, and Client
	// is a *redis.Client (CLIENT LIST, PUBSUB CHANNELS of the whole data
	// set, pool statistics, one address to proxy).
	SingleNode Capability = "single-node server"
	// ProcessControl: the test may kill and restart the server (Server).
	// The shared cluster must survive the test, and miniredis is no
	// process.
	ProcessControl Capability = "server process it may kill"
	// VirtualClock: FastForward moves TTLs without waiting (Mini).
	VirtualClock Capability = "virtual clock (miniredis)"
)

// Has reports whether the Env has c.
func (e *Env) Has(c Capability) bool {
	switch c {
	case SingleNode:
		return e.Cluster == nil && e.Client != nil
	case ProcessControl:
		return e.Server != nil
	case VirtualClock:
		return e.Mini != nil
	}
	return false
}

// Require skips the test, naming the capability, the backend and why, when
// the Env lacks c. Skipped is not passed: the reason is in the test log.
func (e *Env) Require(t testing.TB, c Capability, why string) {
	t.Helper()
	if !e.Has(c) {
		t.Skipf("SKIP on the %s backend: needs a %s: %s", e.Name(), c, why)
	}
}

// Name is the name of the Env's backend.
func (e *Env) Name() string {
	switch {
	case e.Cluster != nil:
		return "cluster"
	case e.Mini != nil:
		return "miniredis"
	case e.Server != nil:
		return "redis"
	}
	return fmt.Sprintf("%T", e.U())
}

// Backend names a kind of server and builds a fresh Env on it.
type Backend struct {
	Name string
	New  func(t testing.TB) *Env
}

// Backends returns the single-server backends: "miniredis" and "redis" (a
// fresh redis-server process per New, so subtests never share state). The
// "redis" backend fails or skips per [RequireRedisServer]. Every Env has
// Client.
func Backends() []Backend {
	return []Backend{
		{
			Name: "miniredis",
			New: func(t testing.TB) *Env {
				t.Helper()
				mr, client := Miniredis(t)
				return &Env{Universal: client, Client: client, Mini: mr}
			},
		},
		{
			Name: "redis",
			New: func(t testing.TB) *Env {
				t.Helper()
				s := StartServer(t)
				if s == nil { // only with a testing.TB whose Fatalf returns
					return nil
				}
				c := s.Client(t)
				return &Env{Universal: c, Client: c, Server: s}
			},
		},
	}
}

// ClusterBackend is the "cluster" backend: a 3-master Redis Cluster shared
// by the whole test binary (TestMain must use [Main]), started by the first
// New. Each New waits until no other test holds the cluster, flushes every
// master and returns a fresh ClusterClient (closed at t.Cleanup), so tests
// never see each other's keys; parallel tests take turns.
func ClusterBackend() Backend {
	return Backend{
		Name: "cluster",
		New: func(t testing.TB) *Env {
			t.Helper()
			servers, ok := acquireShared(t)
			if !ok {
				return nil
			}
			cc := NewClusterClient(servers)
			t.Cleanup(func() { _ = cc.Close() })
			return &Env{Universal: cc, Cluster: servers}
		},
	}
}

// AllBackends is what the behaviour suites run on: [Backends] and the
// shared cluster ([ClusterBackend]). Use Env.Universal (or U) there.
func AllBackends() []Backend {
	return append(Backends(), ClusterBackend())
}

// Slots maps every key of the cluster and every shard channel someone is
// subscribed to (PUBSUB SHARDCHANNELS) to its slot, as CLUSTER KEYSLOT
// computes it on the master that holds it. After a flush these are the
// keys and channels of what the test did, so a test can check that every
// key of one primitive lands in one slot.
func Slots(ctx context.Context, cc *redis.ClusterClient) (keys, channels map[string]int64, err error) {
	var mu sync.Mutex
	keys, channels = map[string]int64{}, map[string]int64{}
	err = cc.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
		ks, err := node.Keys(ctx, "*").Result()
		if err != nil {
			return err
		}
		chs, err := node.PubSubShardChannels(ctx, "*").Result()
		if err != nil {
			return err
		}
		for i, names := range [][]string{ks, chs} {
			for _, name := range names {
				slot, err := node.ClusterKeySlot(ctx, name).Result()
				if err != nil {
					return err
				}
				mu.Lock()
				if i == 0 {
					keys[name] = slot
				} else {
					channels[name] = slot
				}
				mu.Unlock()
			}
		}
		return nil
	})
	return keys, channels, err
}

// RequireOneSlot fails t unless every key and shard channel on the cluster
// is in the slot of name (CLUSTER KEYSLOT), at least one channel is
// subscribed, and for each of parts some key contains it. After the flush
// of a cluster Env, what is on the cluster is what the test's primitive
// wrote, so this checks that each of its scripts touches one slot.
func RequireOneSlot(t testing.TB, ctx context.Context, cc *redis.ClusterClient, name string, parts ...string) {
	t.Helper()
	slot, err := cc.ClusterKeySlot(ctx, name).Result()
	if err != nil {
		t.Fatalf("redistest: CLUSTER KEYSLOT %q: %v", name, err)
	}
	ks, chs, err := Slots(ctx, cc)
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	if len(chs) == 0 {
		t.Fatalf("redistest: no shard channel subscribed (keys %v)", ks)
	}
	for _, p := range parts {
		found := false
		for k := range ks {
			found = found || strings.Contains(k, p)
		}
		if !found {
			t.Fatalf("redistest: no key of %q contains %q: keys %v", name, p, ks)
		}
	}
	for k, s := range ks {
		if s != slot {
			t.Fatalf("redistest: key %q is in slot %d, lock %q in %d (keys %v)", k, s, name, slot, ks)
		}
	}
	for ch, s := range chs {
		if s != slot {
			t.Fatalf("redistest: channel %q is in slot %d, lock %q in %d", ch, s, name, slot)
		}
	}
}
