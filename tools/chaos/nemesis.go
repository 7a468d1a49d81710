package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// FaultEvent is a fault as it happened: the schedule's entry with the
// wall-clock times it was applied and undone.
type FaultEvent struct {
	Fault
	At    int64  `json:"at"`    // Unix ns the fault began
	Until int64  `json:"until"` // Unix ns it was undone
	Note  string `json:"note,omitzero"`
	Err   string `json:"err,omitzero"`
}

// nemesis runs the schedule: each fault on a goroutine of its own that
// applies it at its start and undoes it at its end. run returns when every
// fault is undone.
func (r *runner) nemesis(ctx context.Context, sched []Fault) []FaultEvent {
	var (
		wg  sync.WaitGroup
		mu  sync.Mutex
		evs []FaultEvent
	)
	for _, f := range sched {
		wg.Go(func() {
			if !sleepUntil(ctx, r.start.Add(f.Start)) {
				return
			}
			ev := FaultEvent{Fault: f, At: now()}
			undo, note, err := r.apply(f)
			ev.Note, ev.Err = note, errText(err)
			fmt.Fprintf(r.log, "%s fault   %s %s %s\n", r.stamp(), f, note, errText(err))
			if err == nil {
				sleepUntil(ctx, r.start.Add(f.End)) // undone even when ctx ends early
				if err := undo(); err != nil {
					ev.Err = errText(err)
				}
			}
			ev.Until = now()
			fmt.Fprintf(r.log, "%s healed  #%d %s\n", r.stamp(), f.ID, ev.Err)
			mu.Lock()
			evs = append(evs, ev)
			mu.Unlock()
		})
	}
	wg.Wait()
	return evs
}

// sleepUntil waits until t or ctx ends; it reports whether t was reached.
func sleepUntil(ctx context.Context, t time.Time) bool {
	return sleep(ctx, time.Until(t))
}

// apply starts fault f and returns what undoes it, and a note of what it
// acted on (a role resolved at run time, say).
func (r *runner) apply(f Fault) (func() error, string, error) {
	none := func() error { return nil }
	switch f.Kind {
	case fPauseServer:
		s, err := r.server(f.Target)
		if err != nil {
			return nil, "", err
		}
		return func() error { return s.signal(syscall.SIGCONT) }, "", s.signal(syscall.SIGSTOP)
	case fKillServer:
		return r.killServer(f)
	case fSentinelFail:
		return none, "", r.sentinelFailover()
	case fClusterFail:
		note, err := r.clusterFailover(f.Target)
		return none, note, err
	case fPartition:
		return r.partition(f)
	case fLatency:
		return r.latency(f)
	case fClientPause:
		return none, "", r.clientPause(f)
	case fStopWorker:
		return r.stopWorker(f)
	case fKillWorker:
		return r.killWorker(f)
	case fBusyScript:
		return r.busyScript(f)
	case fClockStep:
		return r.clockStep(f)
	}
	return nil, "", fmt.Errorf("unknown fault kind %q", f.Kind)
}

func (r *runner) server(id string) (*server, error) {
	s, ok := r.servers[id]
	if !ok {
		return nil, fmt.Errorf("no server %q", id)
	}
	return s, nil
}

// killServer SIGKILLs a server and starts it again at the fault's end on
// the same port; a server without AOF comes back empty.
func (r *runner) killServer(f Fault) (func() error, string, error) {
	s, err := r.server(f.Target)
	if err != nil {
		return nil, "", err
	}
	note := roleOf(s) + ", no AOF"
	if s.aof {
		note = roleOf(s) + ", AOF fsync always"
	}
	s.kill()
	return func() error {
		if _, err := s.start(); err != nil {
			return err
		}
		return r.waitOwn(s)
	}, note, nil
}

// admin is a short-lived client straight to a server (no proxy).
func admin(addr string) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: time.Second,
		ReadTimeout: 2 * time.Second, WriteTimeout: time.Second})
}

// sentinelFailover asks the first Sentinel that answers for a failover.
func (r *runner) sentinelFailover() error {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	var errs []error
	for _, s := range r.topos["sentinel"].sentinels {
		sc := redis.NewSentinelClient(&redis.Options{Addr: s.addr, MaxRetries: -1, DialTimeout: time.Second})
		err := sc.Failover(ctx, sentinelMaster).Err()
		_ = sc.Close()
		if err == nil {
			return nil
		}
		errs = append(errs, err)
	}
	return fmt.Errorf("SENTINEL FAILOVER: %w", errors.Join(errs...))
}

// clusterFailover sends CLUSTER FAILOVER to the node the schedule names,
// or, when an earlier failover made it a master, to a replica of it: the
// fault then fails its shard back.
func (r *runner) clusterFailover(id string) (string, error) {
	s, err := r.server(id)
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	c := admin(s.addr)
	defer c.Close()
	target, note := s, ""
	if role, err := c.Do(ctx, "ROLE").Slice(); err == nil && len(role) > 0 && role[0] == "master" {
		if target, err = r.replicaOf(ctx, c); err != nil {
			return "", err
		}
		note = "now a master; failed over to its replica " + target.id
	}
	t := admin(target.addr)
	defer t.Close()
	if err := t.Do(ctx, "CLUSTER", "FAILOVER").Err(); err != nil {
		return note, fmt.Errorf("CLUSTER FAILOVER on %s: %w", target.id, err)
	}
	return note, nil
}

// replicaOf finds a node of the cluster that replicates the master c
// talks to.
func (r *runner) replicaOf(ctx context.Context, c *redis.Client) (*server, error) {
	myID, err := c.Do(ctx, "CLUSTER", "MYID").Text()
	if err != nil {
		return nil, fmt.Errorf("CLUSTER MYID: %w", err)
	}
	nodes, err := c.ClusterNodes(ctx).Result()
	if err != nil {
		return nil, fmt.Errorf("CLUSTER NODES: %w", err)
	}
	for _, line := range strings.Split(nodes, "\n") {
		f := strings.Fields(line)
		if len(f) < 4 || f[3] != myID || strings.Contains(f[2], "fail") {
			continue
		}
		addr, _, _ := strings.Cut(f[1], "@")
		for _, s := range r.topos["cluster"].data {
			if s.addr == addr {
				return s, nil
			}
		}
	}
	return nil, errors.New("no live replica of " + myID)
}

func (r *runner) partition(f Fault) (func() error, string, error) {
	if f.Mode == "down" {
		return func() error { return r.px.up(f.Target, f.Server) }, "", r.px.down(f.Target, f.Server)
	}
	// timeout 0: data is held and never delivered until the toxic goes.
	return func() error { return r.px.clear(f.Target, f.Server) }, "",
		r.px.toxic(f.Target, f.Server, "timeout", `"timeout":0`)
}

func (r *runner) latency(f Fault) (func() error, string, error) {
	servers := r.lay.dataServers(f.Topo)
	undo := func() error {
		var errs []error
		for _, s := range servers {
			errs = append(errs, r.px.clear(f.Target, s))
		}
		return errors.Join(errs...)
	}
	for _, s := range servers {
		attrs := fmt.Sprintf(`"latency":%d,"jitter":%d`, f.Amount.Milliseconds(), f.Amount.Milliseconds()/4)
		if err := r.px.toxic(f.Target, s, "latency", attrs); err != nil {
			return undo, "", errors.Join(err, undo())
		}
	}
	return undo, "", nil
}

func (r *runner) clientPause(f Fault) error {
	s, err := r.server(f.Target)
	if err != nil {
		return err
	}
	c := admin(s.addr)
	defer c.Close()
	ms := strconv.FormatInt((f.End - f.Start).Milliseconds(), 10)
	return c.Do(context.Background(), "CLIENT", "PAUSE", ms, f.Mode).Err()
}

func (r *runner) stopWorker(f Fault) (func() error, string, error) {
	w, ok := r.workers[f.Target]
	if !ok {
		return nil, "", fmt.Errorf("no worker %q", f.Target)
	}
	return func() error { return w.signal(syscall.SIGCONT) }, "", w.signal(syscall.SIGSTOP)
}

// killWorker SIGKILLs a worker; a new incarnation starts at the fault's end.
func (r *runner) killWorker(f Fault) (func() error, string, error) {
	w, ok := r.workers[f.Target]
	if !ok {
		return nil, "", fmt.Errorf("no worker %q", f.Target)
	}
	w.kill()
	return func() error {
		_, err := w.start()
		return err
	}, "", nil
}

// busyScript runs a Lua loop on a server that blocks it for the fault's
// length (others get BUSY), then SCRIPT KILLs it. The script writes
// nothing, so it can be killed.
func (r *runner) busyScript(f Fault) (func() error, string, error) {
	s, err := r.server(f.Target)
	if err != nil {
		return nil, "", err
	}
	c := redis.NewClient(&redis.Options{Addr: s.addr, MaxRetries: -1, ReadTimeout: -1})
	done := make(chan error, 1)
	go func() {
		done <- c.Eval(context.Background(), "while true do end", nil).Err()
	}()
	return func() error {
		k := admin(s.addr)
		defer k.Close()
		var err error
		for range 50 { // SCRIPT KILL is refused until the script is seen running
			if err = k.ScriptKill(context.Background()).Err(); err == nil || !strings.Contains(err.Error(), "NOTBUSY") {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		select {
		case <-done:
		case <-time.After(5 * time.Second):
		}
		_ = c.Close()
		if err != nil {
			return fmt.Errorf("SCRIPT KILL on %s: %w", f.Target, err)
		}
		return nil
	}, "", nil
}

// clockStep writes an offset to the file the server's clock shim reads.
func (r *runner) clockStep(f Fault) (func() error, string, error) {
	s, err := r.server(f.Target)
	if err != nil {
		return nil, "", err
	}
	if r.shim == "" {
		return nil, "", errors.New("clock shim not built")
	}
	set := func(d time.Duration) error {
		if err := os.WriteFile(s.clock, []byte(strconv.FormatInt(int64(d), 10)+"\n"), 0o644); err != nil {
			return fmt.Errorf("clock step %s: %w", f.Target, err)
		}
		return nil
	}
	return func() error { return set(0) }, roleOf(s), set(f.Amount)
}

// roleOf is "master" or "replica" as the server says now, for the fault's
// note: the classification needs it (a replica killed without AOF loses
// nothing a client holds), or "role unknown".
func roleOf(s *server) string {
	c := admin(s.addr)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	role, err := c.Do(ctx, "ROLE").Slice()
	switch {
	case err != nil || len(role) == 0:
		return "role unknown"
	case role[0] == "master":
		return "master"
	case role[0] == "slave":
		return "replica"
	}
	return fmt.Sprint(role[0])
}
