package redistest

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/relock-go/relock/internal/conn"

	"github.com/redis/go-redis/v9"
)

const (
	clusterSlots = 16384
	// clusterTimeout bounds the wait for the cluster to form (gossip spreads
	// the slot map in a second or two on loopback; a loaded machine is slower).
	clusterTimeout = 30 * time.Second
)

// StartCluster starts a Redis Cluster of masters redis-server nodes (no
// replicas), the slots spread evenly across them, and returns a ClusterClient
// on it once every node reports cluster_state:ok and knows the owner of every
// slot. The nodes and the client are closed at t.Cleanup. opts go to every
// node, e.g. WithArgs("--cluster-require-full-coverage", "no") keeps the
// other masters serving when one is killed.
//
// The cluster is the test's own; behaviour suites share one cluster per test
// binary through [AllBackends] instead, which is much cheaper.
func StartCluster(t testing.TB, masters int, opts ...ServerOption) (*redis.ClusterClient, []*Server) {
	t.Helper()
	if masters < 1 {
		t.Fatalf("redistest: StartCluster: masters = %d, want >= 1", masters)
		return nil, nil
	}
	servers := StartServers(t, masters, append([]ServerOption{clusterMode()}, opts...)...)
	if len(servers) != masters {
		return nil, nil // StartServers has failed or skipped the test
	}

	ctx, cancel := context.WithTimeout(context.Background(), clusterTimeout)
	defer cancel()
	if err := formCluster(ctx, servers); err != nil {
		t.Fatalf("redistest: StartCluster: %v", err)
		return nil, nil
	}

	cc := NewClusterClient(servers)
	t.Cleanup(func() { _ = cc.Close() })
	return cc, servers
}

// NewClusterClient returns a client of the cluster formed by servers; the
// caller closes it.
func NewClusterClient(servers []*Server) *redis.ClusterClient {
	addrs := make([]string, len(servers))
	for i, s := range servers {
		addrs[i] = s.Addr
	}
	return redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
}

// formCluster does what `redis-cli --cluster create` does for masters only:
// slots, distinct config epochs, MEET, then waits for convergence.
func formCluster(ctx context.Context, servers []*Server) error {
	admins := make([]*redis.Client, len(servers))
	for i, s := range servers {
		// One connection, no retries: setup commands are not idempotent
		// (a retried ADDSLOTSRANGE fails with "already busy").
		admins[i] = redis.NewClient(&redis.Options{Addr: s.Addr, PoolSize: 1, MaxRetries: -1})
	}
	defer func() {
		for _, a := range admins {
			_ = a.Close()
		}
	}()

	n := len(servers)
	for i, a := range admins {
		first := i * clusterSlots / n
		last := (i+1)*clusterSlots/n - 1
		if err := a.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", first, last).Err(); err != nil {
			return fmt.Errorf("%s: CLUSTER ADDSLOTSRANGE %d %d: %w", servers[i].Addr, first, last, err)
		}
		// Distinct epochs up front spare the nodes the collision-resolution
		// round they would otherwise need, as redis-cli does.
		if err := a.Do(ctx, "CLUSTER", "SET-CONFIG-EPOCH", i+1).Err(); err != nil {
			return fmt.Errorf("%s: CLUSTER SET-CONFIG-EPOCH: %w", servers[i].Addr, err)
		}
	}
	for _, s := range servers[1:] {
		// The bus port is not port+10000 here, so it is named explicitly.
		if err := admins[0].Do(ctx, "CLUSTER", "MEET", "127.0.0.1", s.Port, s.BusPort).Err(); err != nil {
			return fmt.Errorf("%s: CLUSTER MEET %s: %w", servers[0].Addr, s.Addr, err)
		}
	}
	return waitClusterReady(ctx, admins)
}

// waitClusterReady polls until every node sees a healthy cluster of all
// the nodes with every slot served.
func waitClusterReady(ctx context.Context, admins []*redis.Client) error {
	for {
		lastErr := clusterReady(ctx, admins, len(admins))
		if lastErr == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster not ready: %w (last check: %w)", ctx.Err(), lastErr)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// clusterReady checks that every node sees a healthy cluster of n nodes with
// every slot served.
func clusterReady(ctx context.Context, admins []*redis.Client, n int) error {
	for _, a := range admins {
		s, err := a.ClusterInfo(ctx).Result()
		if err != nil {
			return fmt.Errorf("%s: CLUSTER INFO: %w", a.Options().Addr, err)
		}
		info := parseInfo(s)
		want := map[string]string{
			"cluster_state":       "ok",
			"cluster_slots_ok":    strconv.Itoa(clusterSlots),
			"cluster_known_nodes": strconv.Itoa(n),
			"cluster_size":        strconv.Itoa(n),
		}
		for k, v := range want {
			if info[k] != v {
				return fmt.Errorf("%s: %s:%s, want %s", a.Options().Addr, k, info[k], v)
			}
		}
	}
	return nil
}

// parseInfo parses "key:value" lines, as INFO and CLUSTER INFO reply.
func parseInfo(s string) map[string]string {
	m := make(map[string]string)
	for line := range strings.SplitSeq(s, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			m[k] = v
		}
	}
	return m
}

// StartClusterWithReplicas starts a Redis Cluster as [StartCluster] does,
// and one replica for each master (CLUSTER REPLICATE), and returns once
// every replica is in sync and acknowledges writes (WAIT). replicas[i] is
// the replica of masters[i].
func StartClusterWithReplicas(t testing.TB, n int, opts ...ServerOption) (cc *redis.ClusterClient, masters, replicas []*Server) {
	t.Helper()
	cc, masters = StartCluster(t, n, append([]ServerOption{WithArgs("--repl-diskless-sync-delay", "0")}, opts...)...)
	if cc == nil {
		return nil, nil, nil
	}
	replicas = StartServers(t, n, append([]ServerOption{clusterMode()}, opts...)...)
	if len(replicas) != n {
		return nil, nil, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), clusterTimeout)
	defer cancel()
	if err := addReplicas(ctx, masters, replicas); err != nil {
		t.Fatalf("redistest: StartClusterWithReplicas: %v", err)
		return nil, nil, nil
	}
	for i, m := range masters {
		g := &Replicated{Master: m, Replicas: replicas[i : i+1]}
		if err := waitReplicaInSync(ctx, m, replicas[i]); err != nil {
			t.Fatalf("redistest: StartClusterWithReplicas: %v", err)
			return nil, nil, nil
		}
		probe, err := keyOn(ctx, m)
		if err == nil {
			err = g.waitAckedOn(ctx, probe)
		}
		if err != nil {
			t.Fatalf("redistest: StartClusterWithReplicas: %v", err)
			return nil, nil, nil
		}
	}
	return cc, masters, replicas
}

// keyOn returns a key whose slot master m serves.
func keyOn(ctx context.Context, m *Server) (string, error) {
	a := redis.NewClient(&redis.Options{Addr: m.Addr, PoolSize: 1, MaxRetries: -1})
	defer a.Close()
	for i := range 10000 {
		key := "redistest:probe:" + strconv.Itoa(i)
		owner, err := slotOwner(ctx, a, conn.Slot(key), []*Server{m})
		if err == nil && owner == m {
			return key, nil
		}
	}
	return "", fmt.Errorf("%s: no probe key of its slots", m.Addr)
}

// addReplicas makes replicas[i] a replica of masters[i]: MEET, then
// REPLICATE once the replica knows its master's id.
func addReplicas(ctx context.Context, masters, replicas []*Server) error {
	admin := redis.NewClient(&redis.Options{Addr: masters[0].Addr, PoolSize: 1, MaxRetries: -1})
	defer admin.Close()
	for _, r := range replicas {
		if err := admin.Do(ctx, "CLUSTER", "MEET", "127.0.0.1", r.Port, r.BusPort).Err(); err != nil {
			return fmt.Errorf("%s: CLUSTER MEET %s: %w", masters[0].Addr, r.Addr, err)
		}
	}
	ids := make([]string, len(masters))
	for i, r := range replicas {
		m := redis.NewClient(&redis.Options{Addr: masters[i].Addr, PoolSize: 1, MaxRetries: -1})
		id, err := m.Do(ctx, "CLUSTER", "MYID").Text()
		_ = m.Close()
		if err != nil {
			return fmt.Errorf("%s: CLUSTER MYID: %w", masters[i].Addr, err)
		}
		ids[i] = id
		a := redis.NewClient(&redis.Options{Addr: r.Addr, PoolSize: 1, MaxRetries: -1})
		err = sentinelPoll(ctx, r.Addr+" does not know its master yet", func() error {
			return a.Do(ctx, "CLUSTER", "REPLICATE", id).Err()
		})
		_ = a.Close()
		if err != nil {
			return err
		}
	}
	// Every node must know each replica's master before a failover can
	// be voted for (a master refuses its vote to a replica it does not
	// know as the failed master's).
	for _, s := range append(append([]*Server{}, masters...), replicas...) {
		a := redis.NewClient(&redis.Options{Addr: s.Addr, PoolSize: 1, MaxRetries: -1})
		err := sentinelPoll(ctx, s.Addr+" does not know every replica", func() error {
			nodes, err := a.ClusterNodes(ctx).Result()
			if err != nil {
				return err
			}
			for i, r := range replicas {
				if !strings.Contains(nodes, "127.0.0.1:"+strconv.Itoa(r.Port)) ||
					!replicaOf(nodes, r.Port, ids[i]) {
					return fmt.Errorf("%s is not yet a replica of %s here", r.Addr, ids[i])
				}
			}
			return nil
		})
		_ = a.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// replicaOf reports whether CLUSTER NODES lists the node on port as a
// replica ("slave") of master.
func replicaOf(nodes string, port int, master string) bool {
	addr := "127.0.0.1:" + strconv.Itoa(port) + "@"
	for line := range strings.Lines(nodes) {
		f := strings.Fields(line)
		if len(f) > 3 && strings.HasPrefix(f[1], addr) && strings.Contains(f[2], "slave") && f[3] == master {
			return true
		}
	}
	return false
}
