// Command commonpath measures the library's common path: which of its
// functions and files one warm, uncontended Lock+Unlock runs (coverage
// counters, cleared after a warm-up pair), and how many library frames
// deep the acquire script is sent (a go-redis hook reads the stack).
// Run it through run.sh, which builds it with coverage.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"runtime/coverage"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/lock"
)

// depthHook records the library frames on the stack of each command sent.
type depthHook struct {
	depths map[string]int
	stacks map[string][]string
}

func (h *depthHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *depthHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.record(cmds[0].Name())
		return next(ctx, cmds)
	}
}

func (h *depthHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.record(cmd.Name())
		return next(ctx, cmd)
	}
}

func (h *depthHook) record(name string) {
	pcs := make([]uintptr, 128)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(2, pcs)])
	n := 0
	var stack []string
	for {
		f, more := frames.Next()
		if strings.HasPrefix(f.Function, "github.com/relock-go/relock/") && !strings.Contains(f.Function, "/bench/") {
			n++
			stack = append(stack, strings.TrimPrefix(f.Function, "github.com/relock-go/relock/"))
		}
		if !more {
			break
		}
	}
	if n > 0 {
		name += " from " + stack[n-1]
	}
	if n > h.depths[name] {
		h.depths[name], h.stacks[name] = n, stack
	}
}

// measure runs f between cleared coverage counters and their write to dir.
func measure(dir string, f func() (context.Context, error)) (context.Context, error) {
	if err := coverage.ClearCounters(); err != nil {
		return nil, err
	}
	ctx, err := f()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	return ctx, coverage.WriteCountersDir(dir)
}

func main() {
	addr := flag.String("addr", "127.0.0.1:6379", "redis-server address (loopback)")
	dir := flag.String("out", "", "coverage counters directory")
	flag.Parse()
	if host, _, err := net.SplitHostPort(*addr); err != nil || !net.ParseIP(host).IsLoopback() {
		log.Fatalf("-addr %q: a loopback host:port is needed", *addr)
	}
	rdb := redis.NewClient(&redis.Options{Addr: *addr})
	defer rdb.Close()
	ctx := context.Background()
	m := lock.New(rdb, "commonpath")
	pair := func() {
		held, err := m.Lock(ctx)
		if err != nil {
			log.Fatal(err)
		}
		if err := m.Unlock(held); err != nil {
			log.Fatal(err)
		}
	}
	for range 3 {
		pair() // loads the scripts, starts the workers and the watchdog
	}
	h := &depthHook{depths: map[string]int{}, stacks: map[string][]string{}}
	rdb.AddHook(h)
	// Lock's counters to dir/lock, Unlock's to dir/unlock.
	held, err := measure(filepath.Join(*dir, "lock"), func() (context.Context, error) { return m.Lock(ctx) })
	if err != nil {
		log.Fatal(err)
	}
	if _, err := measure(filepath.Join(*dir, "unlock"), func() (context.Context, error) { return nil, m.Unlock(held) }); err != nil {
		log.Fatal(err)
	}
	for name, d := range h.depths {
		fmt.Fprintf(os.Stdout, "depth at %s: %d library frames\n", name, d)
		for i := len(h.stacks[name]) - 1; i >= 0; i-- {
			fmt.Fprintf(os.Stdout, "  %s\n", h.stacks[name][i])
		}
	}
}
