package redistest

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Replicated is a master and its replicas, started by [StartReplicated].
type Replicated struct {
	Master   *Server
	Replicas []*Server
}

// StartReplicated starts on loopback a master and n replicas of it
// (--replicaof) and waits until every replica is in sync and listed
// online by the master. opts go to every server. The processes stop at
// t.Cleanup. Without redis-server the test fails in CI and is skipped
// elsewhere, as with [StartServers]; then (and after any other failure
// reported to a t that does not stop) it returns nil.
func StartReplicated(t testing.TB, n int, opts ...ServerOption) *Replicated {
	t.Helper()
	master := StartServer(t, append([]ServerOption{WithArgs("--repl-diskless-sync-delay", "0")}, opts...)...)
	if master == nil {
		return nil
	}
	g := &Replicated{Master: master}
	ctx, cancel := context.WithTimeout(context.Background(), sentinelReadyTimeout)
	defer cancel()
	for range n {
		r := StartServer(t, append(opts[:len(opts):len(opts)],
			WithArgs("--replicaof", "127.0.0.1", strconv.Itoa(master.Port)))...)
		if r == nil {
			return nil
		}
		if err := waitReplicaInSync(ctx, master, r); err != nil {
			t.Fatalf("redistest: StartReplicated: %v", err)
			return nil
		}
		g.Replicas = append(g.Replicas, r)
	}
	if err := g.waitAcked(ctx); err != nil {
		t.Fatalf("redistest: StartReplicated: %v", err)
		return nil
	}
	return g
}

// waitAcked polls until a write on the master is acknowledged (WAIT) by
// every replica: a replica listed online answers WAIT only from its first
// acknowledgement on, up to a second after its sync.
func (g *Replicated) waitAcked(ctx context.Context) error {
	return g.waitAckedOn(ctx, "redistest:probe")
}

// waitAckedOn is waitAcked with a probe key the master serves (on a
// cluster, one of its slots).
func (g *Replicated) waitAckedOn(ctx context.Context, probe string) error {
	if len(g.Replicas) == 0 {
		return nil
	}
	c := redis.NewClient(&redis.Options{Addr: g.Master.Addr, MaxRetries: -1, PoolSize: 1})
	defer c.Close()
	defer c.Del(context.WithoutCancel(ctx), probe)
	return sentinelPoll(ctx, "replicas do not acknowledge", func() error {
		if err := c.Incr(ctx, probe).Err(); err != nil {
			return err
		}
		n, err := c.Wait(ctx, len(g.Replicas), 100*time.Millisecond).Result()
		if err != nil {
			return err
		}
		if int(n) < len(g.Replicas) {
			return fmt.Errorf("WAIT: %d of %d replicas acknowledged", n, len(g.Replicas))
		}
		return nil
	})
}

// Pause stops the process with SIGSTOP, as a hung server (a long fork, a
// stalled disk, a VM paused) would be: it keeps its connections and
// answers nothing until Resume. Resume is also called at t.Cleanup.
func (s *Server) Pause(t testing.TB) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.runningLocked() {
		t.Fatalf("redistest: Pause %s: not running", s.Addr)
		return
	}
	if err := s.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatalf("redistest: Pause %s: %v", s.Addr, err)
		return
	}
	t.Cleanup(s.Resume)
}

// Resume continues a server stopped by Pause (SIGCONT); it does nothing
// when the server is not running.
func (s *Server) Resume() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.runningLocked() {
		_ = s.cmd.Process.Signal(syscall.SIGCONT)
	}
}

// WaitInSync waits until every replica of g is in sync with the master
// again (after a Resume, say), or fails the test after timeout.
func (g *Replicated) WaitInSync(t testing.TB, timeout time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for _, r := range g.Replicas {
		if err := waitReplicaInSync(ctx, g.Master, r); err != nil {
			t.Fatalf("redistest: WaitInSync: %v", err)
			return
		}
	}
	if err := g.waitAcked(ctx); err != nil {
		t.Fatalf("redistest: WaitInSync: %v", err)
	}
}

// LogTail returns the last lines of the server's log, for a test that
// fails on what the server did (a failover that did not happen, say).
func (s *Server) LogTail() string { return s.logTail() }

// CommandCalls is how many times the server behind c has run cmd (INFO
// commandstats, "wait", "info", ...), not counting this INFO itself.
func CommandCalls(ctx context.Context, c *redis.Client, cmd string) (int, error) {
	counts, err := CommandCounts(ctx, c)
	return counts[cmd], err
}

// CommandCounts is how many times the server behind c has run each
// command (INFO commandstats, since the start or the last CONFIG
// RESETSTAT; a script's own calls count under their names), not counting
// this INFO itself.
func CommandCounts(ctx context.Context, c *redis.Client) (map[string]int, error) {
	info, err := c.Info(ctx, "commandstats").Result()
	if err != nil {
		return nil, err
	}
	out := map[string]int{}
	for k, v := range parseInfo(info) {
		name, ok := strings.CutPrefix(k, "cmdstat_")
		rest, ok2 := strings.CutPrefix(v, "calls=")
		if !ok || !ok2 {
			continue
		}
		calls, _, _ := strings.Cut(rest, ",")
		n, err := strconv.Atoi(calls)
		if err != nil {
			return nil, fmt.Errorf("commandstats %s: %w", k, err)
		}
		out[name] = n
	}
	return out, nil
}
