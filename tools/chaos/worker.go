package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// worker is one client process: it loops over the primitives of its
// topology on a few lock names and records every operation.
type worker struct {
	topo  string
	proc  string // id#incarnation
	lease time.Duration
	wait  time.Duration // bound on one acquisition's wait
	rec   *recorder
	rnd   *lockedRand
	route map[string]string // server address -> this worker's proxy to it
	sync  bool              // replica sync (WAIT after each acquisition) on
}

// lockedRand is a math/rand/v2 source shared by the worker's goroutines.
type lockedRand struct {
	mu sync.Mutex
	r  *rand.Rand
}

func (l *lockedRand) duration(lo, hi time.Duration) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return lo + time.Duration(l.r.Int64N(int64(hi-lo)+1))
}

func (l *lockedRand) int64n(n int64) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.r.Int64N(n)
}

// runWorker is the `worker` subcommand.
func runWorker(args []string) error {
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	topo := fs.String("topo", "", "sentinel, redlock or cluster")
	id := fs.String("id", "", "worker id")
	inc := fs.Int("inc", 0, "incarnation")
	hist := fs.String("hist", "", "history file")
	lease := fs.Duration("lease", 2*time.Second, "watchdog timeout")
	seed := fs.Uint64("seed", 1, "seed of the worker's choices")
	route := fs.String("route", "", "addr=proxy,... : the proxies to dial instead of the servers")
	data := fs.String("data", "", "data servers, comma-separated")
	sentinels := fs.String("sentinels", "", "Sentinels, comma-separated")
	replicaSync := fs.Bool("replica-sync", true, "WAIT for a replica after each acquisition (the default)")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	rec, err := newRecorder(*hist)
	if err != nil {
		return err
	}
	defer rec.close()
	w := &worker{topo: *topo, proc: fmt.Sprintf("%s#%d", *id, *inc), lease: *lease, wait: 10 * *lease,
		rec: rec, rnd: &lockedRand{r: rand.New(rand.NewPCG(*seed, uint64(*inc)))}, route: parseRoute(*route), sync: *replicaSync}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	return w.run(ctx, splitList(*data), splitList(*sentinels))
}

func splitList(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

func parseRoute(s string) map[string]string {
	m := map[string]string{}
	for _, kv := range splitList(s) {
		if a, b, ok := strings.Cut(kv, "="); ok {
			m[a] = b
		}
	}
	return m
}

// dial connects to this worker's proxy for addr, or to addr itself when it
// has none (a Sentinel).
func (w *worker) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	if p, ok := w.route[addr]; ok {
		addr = p
	}
	d := net.Dialer{Timeout: 500 * time.Millisecond}
	return d.DialContext(ctx, network, addr)
}

// run starts the loops of the topology and waits for them to end, which
// they do when ctx does (SIGTERM from the run).
func (w *worker) run(ctx context.Context, data, sentinels []string) error {
	var loops []func(context.Context)
	var closers []func() error
	switch w.topo {
	case "sentinel":
		c := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: sentinelMaster, SentinelAddrs: sentinels,
			Dialer: w.dial, DialTimeout: 500 * time.Millisecond, ReadTimeout: time.Second,
			WriteTimeout: time.Second, ContextTimeoutEnabled: true})
		closers = append(closers, c.Close)
		loops = w.singleLoops(c)
	case "cluster":
		c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: data, Dialer: w.dial,
			DialTimeout: 500 * time.Millisecond, ReadTimeout: time.Second, WriteTimeout: time.Second,
			ContextTimeoutEnabled: true})
		closers = append(closers, c.Close)
		loops = w.singleLoops(c)
	case "redlock":
		var cs []redis.UniversalClient
		for _, a := range data {
			c := redis.NewClient(&redis.Options{Addr: a, Dialer: w.dial, DialTimeout: 500 * time.Millisecond,
				ReadTimeout: time.Second, WriteTimeout: time.Second, ContextTimeoutEnabled: true})
			cs = append(cs, c)
			closers = append(closers, c.Close)
		}
		loops = w.redlockLoops(cs)
	default:
		return fmt.Errorf("worker: unknown topology %q", w.topo)
	}
	var wg sync.WaitGroup
	for _, l := range loops {
		wg.Go(func() { l(ctx) })
	}
	wg.Wait()
	var errs []error
	for _, c := range closers {
		errs = append(errs, c())
	}
	return errors.Join(errs...)
}

func now() int64 { return time.Now().UnixNano() }

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// sleep waits d or until ctx ends; it reports whether ctx is still live.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
