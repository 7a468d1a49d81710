package redistest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

const (
	// SentinelMasterName is the name the sentinel monitors the master under,
	// the MasterName of the failover clients.
	SentinelMasterName = "relock"
	// sentinelDownAfter is how long the master may not answer before the
	// sentinel calls it down: short, so a failover takes seconds, not the
	// default 30 s.
	sentinelDownAfter = 1000 * time.Millisecond
	// sentinelFailoverTimeout bounds one failover attempt (default 3 min);
	// it is also the wait before a failed attempt is retried.
	sentinelFailoverTimeout = 3000 * time.Millisecond
	// sentinelReadyTimeout bounds the wait for the replica to sync and the
	// sentinel to know both nodes (a second or two on loopback).
	sentinelReadyTimeout = 20 * time.Second
)

// SentinelGroup is a master, its replica and one sentinel monitoring them,
// started by [StartSentinel]. Master and Replica are the roles at start; a
// failover swaps them on the Redis side, not in these fields.
type SentinelGroup struct {
	Master   *Server
	Replica  *Server
	Sentinel *Server
}

// StartSentinel starts on loopback a master, one replica of it
// (--replicaof) and one sentinel (quorum 1, down-after-milliseconds 1000,
// failover-timeout 3000), waits until the replica is in sync and the
// sentinel knows the master and the replica, and returns a failover client
// (redis.NewFailoverClient) of the group. opts go to the master and the
// replica; the sentinel only takes their start timeout. The processes and
// the client are stopped at t.Cleanup. Without redis-server the test fails
// in CI and is skipped elsewhere, as with [StartServers]; then (and after
// any other failure reported to a t that does not stop) it returns nil, nil.
//
// Kill the master with g.Master.Kill() and wait for the promotion with
// [SentinelGroup.WaitFailover].
func StartSentinel(t testing.TB, opts ...ServerOption) (*redis.Client, *SentinelGroup) {
	t.Helper()
	// A diskless full sync otherwise waits 5 s for more replicas to join.
	master := StartServer(t, append([]ServerOption{WithArgs("--repl-diskless-sync-delay", "0")}, opts...)...)
	if master == nil {
		return nil, nil
	}
	replica := StartServer(t, append(opts[:len(opts):len(opts)],
		WithArgs("--replicaof", "127.0.0.1", strconv.Itoa(master.Port)))...)
	if replica == nil {
		return nil, nil
	}

	ctx, cancel := context.WithTimeout(context.Background(), sentinelReadyTimeout)
	defer cancel()
	// The sentinel learns the replicas from the master's INFO, which it
	// sends on connecting and then only every 10 s: the replica must be
	// attached first or the group would take 10 s to be ready.
	if err := waitReplicaInSync(ctx, master, replica); err != nil {
		t.Fatalf("redistest: StartSentinel: %v", err)
		return nil, nil
	}

	cfg := serverConfig{startTimeout: defaultStartTimeout, pickPort: freePort}
	for _, o := range opts {
		o(&cfg)
	}
	sentinel, err := startSentinelProcess(master.bin, t.TempDir(), &cfg, master.Port)
	if err != nil {
		t.Fatalf("redistest: StartSentinel: %v", err)
		return nil, nil
	}
	t.Cleanup(sentinel.Stop)

	g := &SentinelGroup{Master: master, Replica: replica, Sentinel: sentinel}
	if err := g.waitSentinelReady(ctx); err != nil {
		t.Fatalf("redistest: StartSentinel: %v\n%s", err, sentinel.logTail())
		return nil, nil
	}
	return g.NewClient(t), g
}

// NewClient returns another failover client of the group (another
// "process"), closed at t.Cleanup. opts adjust the options before the
// client is made.
func (g *SentinelGroup) NewClient(t testing.TB, opts ...func(*redis.FailoverOptions)) *redis.Client {
	t.Helper()
	o := &redis.FailoverOptions{
		MasterName:    SentinelMasterName,
		SentinelAddrs: []string{g.Sentinel.Addr},
	}
	for _, fn := range opts {
		fn(o)
	}
	c := redis.NewFailoverClient(o)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// MasterAddr asks the sentinel which address serves the master now.
func (g *SentinelGroup) MasterAddr(ctx context.Context) (string, error) {
	sc := g.sentinelClient()
	defer sc.Close()
	addr, err := sc.GetMasterAddrByName(ctx, SentinelMasterName).Result()
	if err != nil {
		return "", fmt.Errorf("SENTINEL GET-MASTER-ADDR-BY-NAME: %w", err)
	}
	if len(addr) != 2 {
		return "", fmt.Errorf("SENTINEL GET-MASTER-ADDR-BY-NAME: %q", addr)
	}
	return addr[0] + ":" + addr[1], nil
}

// WaitFailover waits until the sentinel names another master than from and
// that server reports the master role, and returns its address. A failover
// takes a few seconds after the master stops answering: 1 s to call it
// down, up to 1 s of election delay, then the promotion.
func (g *SentinelGroup) WaitFailover(ctx context.Context, from string) (string, error) {
	var to string
	err := sentinelPoll(ctx, "no failover from "+from, func() error {
		addr, err := g.MasterAddr(ctx)
		if err != nil {
			return err
		}
		if addr == from {
			return fmt.Errorf("sentinel still names %s", addr)
		}
		to = addr
		return sentinelRoleIs(ctx, addr, "master")
	})
	if err != nil {
		return "", err
	}
	return to, nil
}

func (g *SentinelGroup) sentinelClient() *redis.SentinelClient {
	// No retries: the callers poll, and a dead sentinel should say so fast.
	return redis.NewSentinelClient(&redis.Options{Addr: g.Sentinel.Addr, MaxRetries: -1, PoolSize: 1})
}

// waitSentinelReady polls until the sentinel sees the master up with one
// replica, and has itself talked to the replica and found its link up:
// only such a replica can be promoted.
func (g *SentinelGroup) waitSentinelReady(ctx context.Context) error {
	sc := g.sentinelClient()
	defer sc.Close()
	check := func() error {
		m, err := sc.Master(ctx, SentinelMasterName).Result()
		if err != nil {
			return fmt.Errorf("SENTINEL MASTER: %w", err)
		}
		if m["flags"] != "master" || m["num-slaves"] != "1" {
			return fmt.Errorf("SENTINEL MASTER: flags %q, num-slaves %q", m["flags"], m["num-slaves"])
		}
		rs, err := sc.Replicas(ctx, SentinelMasterName).Result()
		if err != nil {
			return fmt.Errorf("SENTINEL REPLICAS: %w", err)
		}
		if len(rs) != 1 {
			return fmt.Errorf("SENTINEL REPLICAS: %d replicas, want 1", len(rs))
		}
		r := rs[0]
		if r["ip"]+":"+r["port"] != g.Replica.Addr || r["flags"] != "slave" || r["master-link-status"] != "ok" {
			return fmt.Errorf("SENTINEL REPLICAS: %s:%s flags %q master-link-status %q, want %s slave ok",
				r["ip"], r["port"], r["flags"], r["master-link-status"], g.Replica.Addr)
		}
		return nil
	}
	return sentinelPoll(ctx, "sentinel not ready", check)
}

// waitReplicaInSync polls until the replica's link is up with no sync in
// progress and the master lists it online.
func waitReplicaInSync(ctx context.Context, master, replica *Server) error {
	check := func() error {
		ri, err := sentinelInfo(ctx, replica.Addr, "replication")
		if err != nil {
			return err
		}
		if ri["role"] != "slave" || ri["master_link_status"] != "up" || ri["master_sync_in_progress"] != "0" {
			return fmt.Errorf("replica %s: role %q, master_link_status %q, master_sync_in_progress %q",
				replica.Addr, ri["role"], ri["master_link_status"], ri["master_sync_in_progress"])
		}
		mi, err := sentinelInfo(ctx, master.Addr, "replication")
		if err != nil {
			return err
		}
		want := fmt.Sprintf("ip=127.0.0.1,port=%d,state=online", replica.Port)
		n, _ := strconv.Atoi(mi["connected_slaves"])
		for j := range n {
			if strings.HasPrefix(mi["slave"+strconv.Itoa(j)], want) {
				return nil
			}
		}
		return fmt.Errorf("master %s: connected_slaves %q, none %s", master.Addr, mi["connected_slaves"], want)
	}
	return sentinelPoll(ctx, "replica not in sync", check)
}

// startSentinelProcess starts `redis-server <conf> --sentinel` in dir with
// the defaults of [StartServers], on a new port when the one picked is
// taken. startServer cannot do it: the config file must be the first
// argument, and a sentinel cannot run without one (it saves its state
// there).
func startSentinelProcess(bin, dir string, cfg *serverConfig, masterPort int) (*Server, error) {
	var lastErr error
	for range startAttempts {
		port, err := cfg.pickPort()
		if err != nil {
			return nil, err
		}
		s := &Server{
			Addr:    "127.0.0.1:" + strconv.Itoa(port),
			Port:    port,
			Dir:     dir,
			bin:     bin,
			timeout: cfg.startTimeout,
		}
		conf := filepath.Join(dir, "sentinel-"+strconv.Itoa(port)+".conf")
		// "monitor" must come before the other settings of the master.
		text := fmt.Sprintf("sentinel monitor %s 127.0.0.1 %d 1\n"+
			"sentinel down-after-milliseconds %[1]s %[3]d\n"+
			"sentinel failover-timeout %[1]s %[4]d\n"+
			"sentinel parallel-syncs %[1]s 1\n",
			SentinelMasterName, masterPort,
			sentinelDownAfter.Milliseconds(), sentinelFailoverTimeout.Milliseconds())
		if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
			return nil, fmt.Errorf("sentinel config: %w", err)
		}
		// Only the defaults: the data nodes' arguments (maxmemory, say)
		// mean nothing to a sentinel.
		s.args = append([]string{conf, "--sentinel"}, s.buildArgs(&serverConfig{})...)

		err = s.start()
		if err == nil {
			return s, nil
		}
		s.Stop()
		if !errors.Is(err, errPortTaken) {
			return nil, fmt.Errorf("sentinel: %w", err)
		}
		lastErr = err
	}
	return nil, fmt.Errorf("start sentinel: no free port after %d attempts: %w", startAttempts, lastErr)
}

// sentinelInfo returns the INFO section of the server at addr, parsed.
func sentinelInfo(ctx context.Context, addr, section string) (map[string]string, error) {
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, PoolSize: 1})
	defer c.Close()
	s, err := c.Info(ctx, section).Result()
	if err != nil {
		return nil, fmt.Errorf("%s: INFO %s: %w", addr, section, err)
	}
	return parseInfo(s), nil
}

// sentinelRoleIs checks the role the server at addr reports.
func sentinelRoleIs(ctx context.Context, addr, want string) error {
	ri, err := sentinelInfo(ctx, addr, "replication")
	if err != nil {
		return err
	}
	if ri["role"] != want {
		return fmt.Errorf("%s: role %q, want %q", addr, ri["role"], want)
	}
	return nil
}

// sentinelPoll calls check every 50 ms until it succeeds or ctx ends.
func sentinelPoll(ctx context.Context, what string, check func() error) error {
	for {
		err := check()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %w (last check: %w)", what, ctx.Err(), err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
