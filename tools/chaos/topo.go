package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// server is one redis-server (or Sentinel) of a topology.
type server struct {
	*proc
	id    string // e.g. "sentinel/m0", unique in the run
	addr  string
	port  int
	aof   bool   // appendonly yes, fsync always: a kill loses nothing
	clock string // the file the clock shim reads its offset from
	kind  string // "data" or "sentinel"
}

// topology is a set of servers the workers of one kind talk to.
type topology struct {
	name      string // sentinel, redlock, cluster
	data      []*server
	sentinels []*server
}

const sentinelMaster = "chaosmaster"

// startServer starts a redis-server on a free port in dir, with AOF when
// aof is set, and waits until it accepts connections.
func (r *runner) startServer(id string, aof bool, extra ...string) (*server, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(r.out, "servers", strings.ReplaceAll(id, "/", "-"))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("server %s: %w", id, err)
	}
	s := &server{id: id, addr: "127.0.0.1:" + strconv.Itoa(port), port: port, aof: aof,
		clock: filepath.Join(dir, "clock-offset"), kind: "data"}
	args := []string{"--bind", "127.0.0.1", "--port", strconv.Itoa(port), "--save", "",
		"--protected-mode", "no", "--daemonize", "no", "--dir", dir,
		// A busy script answers BUSY after 200 ms rather than 5 s.
		"--busy-reply-threshold", "200",
		"--repl-diskless-sync-delay", "0"}
	if aof {
		args = append(args, "--appendonly", "yes", "--appendfsync", "always")
	} else {
		args = append(args, "--appendonly", "no")
	}
	args = append(args, extra...)
	s.proc = &proc{name: id, bin: r.redisBin, args: args, dir: dir, log: filepath.Join(dir, "redis.log")}
	if r.shim != "" {
		if err := os.WriteFile(s.clock, []byte("0\n"), 0o644); err != nil {
			return nil, fmt.Errorf("server %s: %w", id, err)
		}
		s.env = []string{"LD_PRELOAD=" + r.shim, "CHAOS_CLOCK_FILE=" + s.clock}
	}
	if err := r.launch(s); err != nil {
		return nil, err
	}
	return s, nil
}

// launch starts s and waits for its port.
func (r *runner) launch(s *server) error {
	r.track(s.proc)
	if _, err := s.start(); err != nil {
		return err
	}
	return r.waitOwn(s)
}

// errForeign: a server's port is answered by another process (a run
// started beside this one took it between freePort and the bind), so the
// workers would talk to a server this run neither faults nor checks.
var errForeign = errors.New("port answered by another process")

// waitOwn waits until s's own process answers on its port. Another
// process answering there invalidates the run: it is recorded (invalid)
// and returned.
func (r *runner) waitOwn(s *server) error {
	if err := waitAddr(s.addr, 10*time.Second); err != nil {
		return fmt.Errorf("server %s: %w", s.id, err)
	}
	c := admin(s.addr)
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		info, err := c.InfoMap(context.Background(), "server").Result()
		if err == nil {
			got := info["Server"]["process_id"]
			if got == strconv.Itoa(s.proc.pid()) {
				return nil
			}
			err = fmt.Errorf("server %s: %w (pid %s, not %d)", s.id, errForeign, got, s.proc.pid())
			r.invalidate(err)
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("server %s: INFO: %w", s.id, err)
		}
		time.Sleep(20 * time.Millisecond) // LOADING, say
	}
}

// invalidate records why the run's results cannot be trusted.
func (r *runner) invalidate(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.invalid == nil {
		r.invalid = err
	}
}

// startSentinelTopology: a master, a replica and three Sentinels (quorum 2).
func (r *runner) startSentinelTopology(ctx context.Context) (*topology, error) {
	t := &topology{name: "sentinel"}
	m, err := r.startServer("sentinel/m0", false)
	if err != nil {
		return nil, err
	}
	rep, err := r.startServer("sentinel/m1", false, "--replicaof", "127.0.0.1", strconv.Itoa(m.port))
	if err != nil {
		return nil, err
	}
	t.data = []*server{m, rep}
	if err := waitReplicaUp(ctx, rep.addr); err != nil {
		return nil, err
	}
	for i := range 3 {
		s, err := r.startSentinel(fmt.Sprintf("sentinel/s%d", i), m.port)
		if err != nil {
			return nil, err
		}
		t.sentinels = append(t.sentinels, s)
	}
	return t, waitSentinels(ctx, t)
}

func (r *runner) startSentinel(id string, masterPort int) (*server, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(r.out, "servers", strings.ReplaceAll(id, "/", "-"))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("sentinel %s: %w", id, err)
	}
	conf := filepath.Join(dir, "sentinel.conf")
	text := fmt.Sprintf("port %d\nbind 127.0.0.1\nprotected-mode no\n"+
		"sentinel monitor %s 127.0.0.1 %d 2\n"+
		"sentinel down-after-milliseconds %[2]s 1000\n"+
		"sentinel failover-timeout %[2]s 3000\n"+
		"sentinel parallel-syncs %[2]s 1\n", port, sentinelMaster, masterPort)
	if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
		return nil, fmt.Errorf("sentinel %s: %w", id, err)
	}
	s := &server{id: id, addr: "127.0.0.1:" + strconv.Itoa(port), port: port, kind: "sentinel"}
	s.proc = &proc{name: id, bin: r.redisBin, args: []string{conf, "--sentinel"}, dir: dir,
		log: filepath.Join(dir, "redis.log")}
	return s, r.launch(s)
}

// waitReplicaUp polls the replica until its link to the master is up.
func waitReplicaUp(ctx context.Context, addr string) error {
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer c.Close()
	return poll(ctx, 15*time.Second, "replica "+addr+" in sync", func() bool {
		s, err := c.Info(ctx, "replication").Result()
		return err == nil && strings.Contains(s, "master_link_status:up") &&
			strings.Contains(s, "master_sync_in_progress:0")
	})
}

// waitSentinels polls until every Sentinel sees the master, its replica and
// the other Sentinels: only then can a failover be agreed.
func waitSentinels(ctx context.Context, t *topology) error {
	for _, s := range t.sentinels {
		sc := redis.NewSentinelClient(&redis.Options{Addr: s.addr, MaxRetries: -1})
		err := poll(ctx, 30*time.Second, "sentinel "+s.addr+" ready", func() bool {
			m, err := sc.Master(ctx, sentinelMaster).Result()
			return err == nil && m["num-slaves"] == "1" && m["num-other-sentinels"] == "2"
		})
		_ = sc.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// startRedlockTopology: five independent masters, every other one with AOF.
func (r *runner) startRedlockTopology() (*topology, error) {
	t := &topology{name: "redlock"}
	for i := range 5 {
		s, err := r.startServer(fmt.Sprintf("redlock/m%d", i), i%2 == 0)
		if err != nil {
			return nil, err
		}
		t.data = append(t.data, s)
	}
	return t, nil
}

// startClusterTopology: three masters with a replica each, formed with
// redis-cli --cluster create.
func (r *runner) startClusterTopology(ctx context.Context) (*topology, error) {
	t := &topology{name: "cluster"}
	var addrs []string
	for i := range 6 {
		bus, err := freePort()
		if err != nil {
			return nil, err
		}
		s, err := r.startServer(fmt.Sprintf("cluster/n%d", i), false, "--cluster-enabled", "yes",
			"--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "2000",
			"--cluster-port", strconv.Itoa(bus), "--cluster-announce-ip", "127.0.0.1")
		if err != nil {
			return nil, err
		}
		t.data = append(t.data, s)
		addrs = append(addrs, s.addr)
	}
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	args := append([]string{"--cluster", "create"}, addrs...)
	args = append(args, "--cluster-replicas", "1", "--cluster-yes")
	if out, err := exec.CommandContext(ctx, cli, args...).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("cluster create: %w: %s", err, out)
	}
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
	defer cc.Close()
	return t, poll(ctx, 30*time.Second, "cluster ready", func() bool {
		for _, s := range t.data {
			c := redis.NewClient(&redis.Options{Addr: s.addr, MaxRetries: -1})
			info, err := c.ClusterInfo(ctx).Result()
			_ = c.Close()
			if err != nil || !strings.Contains(info, "cluster_state:ok") {
				return false
			}
		}
		return cc.Set(ctx, "chaos:probe", "1", time.Second).Err() == nil
	})
}

// poll calls cond every 50 ms until it holds, d passes or ctx ends.
func poll(ctx context.Context, d time.Duration, what string, cond func() bool) error {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %v waiting for %s", d, what)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
	return nil
}
