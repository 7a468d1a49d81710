//go:build faults && linux

package faults

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// boundFault is one of the faults of TestBound's table, on the group's
// first server (the one server of a lock, rwlock or semaphore; one of a
// Redlock's three masters).
type boundFault struct {
	name    string
	args    []string // redis-server arguments the fault needs
	proxied bool     // the cells reach the servers through toxiproxy
	// fixed is how long the fault lasts when it ends by itself, whatever
	// the calls under it do; 0 when stop ends it.
	fixed time.Duration
	// start begins the fault and returns once it holds; the function it
	// returns ends it and returns once the server answers again.
	start func(t *testing.T, g *boundGroup) (stop func())
}

var boundFaults = []*boundFault{
	{name: "sigstop", start: sigstopServer},
	{name: "pause", fixed: boundPause, start: pauseClients},
	{name: "blackhole", proxied: true, start: blackhole},
	// A script past busy-reply-threshold makes the server answer BUSY to
	// every other command until SCRIPT KILL ends it.
	{name: "busy", args: []string{"--busy-reply-threshold", "100"}, start: busyScript},
}

// sigstopServer stops the redis-server process: its socket still takes
// connections and bytes, and nothing answers.
func sigstopServer(t *testing.T, g *boundGroup) func() {
	s := g.servers[0]
	s.Pause(t)
	waitFor(t, "redis-server stopped", 2*time.Second, func() bool { return procState(s.Pid()) == 'T' })
	return func() {
		s.Resume()
		waitFor(t, "redis-server answering after SIGCONT", 5*time.Second, func() bool {
			return g.admin.Ping(context.Background()).Err() == nil
		})
	}
}

// procState is the state letter of process pid (T when stopped), 0 when
// it cannot be read.
func procState(pid int) byte {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// "pid (comm) S ...": comm may hold spaces and parentheses.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return 0
	}
	return s[i+2]
}

// pauseClients sends CLIENT PAUSE ALL for boundPause: every client's
// command waits, the admin's too, so the pause cannot be lifted early.
func pauseClients(t *testing.T, g *boundGroup) func() {
	ctx := context.Background()
	until := time.Now().Add(boundPause)
	if err := g.admin.Do(ctx, "CLIENT", "PAUSE", boundPause.Milliseconds(), "ALL").Err(); err != nil {
		t.Fatalf("CLIENT PAUSE: %v", err)
	}
	return func() {
		time.Sleep(time.Until(until))
		waitFor(t, "the pause to end", 5*time.Second, func() bool { return g.admin.Ping(ctx).Err() == nil })
	}
}

// blackhole drops every byte both ways between the cells and the first
// server, on connections open and new; the connections stay open.
func blackhole(t *testing.T, g *boundGroup) func() {
	p := g.proxies[0]
	for _, stream := range []string{"upstream", "downstream"} {
		js := fmt.Sprintf(`{"name":"blackhole_%s","type":"timeout","stream":%q,"attributes":{"timeout":0}}`, stream, stream)
		if _, err := p.p.Toxics.AddToxicJson(strings.NewReader(js)); err != nil {
			t.Fatalf("add blackhole toxic: %v", err)
		}
	}
	return p.clear
}

// busyLoop is a script that never ends and never writes, so SCRIPT KILL
// can end it (a script that wrote cannot be killed).
const busyLoop = "#!lua flags=no-writes\nwhile true do end"

// busyScript runs busyLoop on a connection of its own and returns once the
// server answers BUSY to others.
func busyScript(t *testing.T, g *boundGroup) func() {
	// No read timeout and no retry: the call lasts until the kill, once.
	c := redis.NewClient(&redis.Options{Addr: g.servers[0].Addr, ReadTimeout: -1, MaxRetries: -1})
	done := make(chan error, 1)
	go func() { done <- c.Eval(context.Background(), busyLoop, nil).Err() }()
	ctx := context.Background()
	waitFor(t, "BUSY replies", 5*time.Second, func() bool {
		err := g.admin.Ping(ctx).Err()
		return err != nil && strings.HasPrefix(err.Error(), "BUSY")
	})
	return func() {
		defer func() { _ = c.Close() }()
		waitFor(t, "the busy script killed", 5*time.Second, func() bool {
			err := g.admin.ScriptKill(ctx).Err()
			return err == nil || strings.Contains(err.Error(), "NOTBUSY")
		})
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Errorf("the busy script's EVAL did not return 5 s after SCRIPT KILL")
		}
	}
}
