package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

func main() {
	var err error
	if len(os.Args) > 1 && os.Args[1] == "worker" {
		err = runWorker(os.Args[2:])
	} else {
		err = runMain(os.Args[1:])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		if errors.Is(err, errViolations) {
			os.Exit(3)
		}
		os.Exit(1)
	}
}

// config is a run's flags.
type config struct {
	seed     uint64
	duration time.Duration
	out      string
	lease    time.Duration
	nWorkers int
	topoList string
	clock    bool
	kinds    string
	dryRun   bool
}

func parseFlags(args []string) (config, error) {
	var c config
	fs := flag.NewFlagSet("chaos", flag.ContinueOnError)
	fs.Uint64Var(&c.seed, "seed", 1, "seed of the fault schedule and the workers' choices")
	fs.DurationVar(&c.duration, "duration", 3*time.Minute, "length of the run (faults stop at 70% of it)")
	fs.StringVar(&c.out, "out", "chaos-out", "output directory (emptied first)")
	fs.DurationVar(&c.lease, "lease", 2*time.Second, "watchdog timeout of every hold")
	fs.IntVar(&c.nWorkers, "workers", 3, "client processes per topology")
	fs.StringVar(&c.topoList, "topos", "sentinel,redlock,cluster", "topologies to run")
	fs.BoolVar(&c.clock, "clock", true, "build the clock shim with cc and step servers' clocks")
	fs.BoolVar(&c.dryRun, "dry-run", false, "print the schedule as JSON and exit: no server is started")
	fs.StringVar(&c.kinds, "kinds", "", "fault kinds to draw from, comma-separated (default: all)")
	if err := fs.Parse(args); err != nil {
		return c, fmt.Errorf("flags: %w", err)
	}
	if c.duration < 10*time.Second {
		return c, errors.New("-duration must be at least 10s")
	}
	return c, nil
}

// runner is the state of one run.
type runner struct {
	config
	redisBin, shim string
	lay            layout
	log            io.Writer
	start          time.Time

	mu      sync.Mutex
	procs   []*proc
	incEnds []IncEnd
	invalid error // why the results cannot be trusted (a server's port taken)

	topos   map[string]*topology
	servers map[string]*server
	workers map[string]*proc
	px      *proxies
}

// IncEnd is when a worker's incarnation ended: a hold it never released
// ends there.
type IncEnd struct {
	Proc string `json:"proc"`
	At   int64  `json:"at"`
}

func (r *runner) track(p *proc) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.procs = append(r.procs, p)
}

func (r *runner) stamp() string {
	return fmt.Sprintf("[%6.1fs]", time.Since(r.start).Seconds())
}

func runMain(args []string) error {
	cfg, err := parseFlags(args)
	if err != nil {
		return err
	}
	if cfg.dryRun {
		return dryRun(cfg)
	}
	r := &runner{config: cfg, log: os.Stdout, topos: map[string]*topology{}, servers: map[string]*server{},
		workers: map[string]*proc{}, px: newProxies(), start: time.Now()}
	if err := r.prepare(); err != nil {
		return err
	}
	// The whole run, drain and checks included, is bounded.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, cfg.duration+3*time.Minute)
	defer cancel()
	defer r.cleanup()
	return r.run(ctx)
}

// prepare empties the output directory, finds redis-server and builds the
// clock shim.
func (r *runner) prepare() error {
	for _, sub := range []string{"servers", "history"} {
		if err := os.RemoveAll(filepath.Join(r.out, sub)); err != nil {
			return fmt.Errorf("out: %w", err)
		}
		if err := os.MkdirAll(filepath.Join(r.out, sub), 0o755); err != nil {
			return fmt.Errorf("out: %w", err)
		}
	}
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return fmt.Errorf("redis-server: %w", err)
	}
	r.redisBin = bin
	if r.clock {
		if r.shim, err = buildShim(filepath.Join(r.out, "servers")); err != nil {
			fmt.Fprintf(r.log, "clock shim not built, no clock steps: %v\n", err)
			r.shim, r.clock = "", false
		}
	}
	r.lay = layout{Topos: strings.Split(r.topoList, ","), Workers: r.nWorkers, Lease: r.lease, Clock: r.clock,
		Only: splitList(r.kinds)}
	return nil
}

// cleanup kills every child process still running and stops the proxies.
func (r *runner) cleanup() {
	r.mu.Lock()
	procs := append([]*proc(nil), r.procs...)
	r.mu.Unlock()
	for _, p := range procs {
		p.kill()
	}
	r.px.stopAll()
}

// phases of a run, as offsets from its start.
func (c config) warmup() time.Duration { return 3 * time.Second }
func (c config) quiet() time.Duration  { return c.duration * 7 / 10 }

func (r *runner) run(ctx context.Context) error {
	sched := makeSchedule(r.seed, r.lay, r.warmup(), r.quiet())
	fmt.Fprintf(r.log, "seed %d, %d faults:\n", r.seed, len(sched))
	for _, f := range sched {
		fmt.Fprintln(r.log, " ", f)
	}
	if err := writeJSON(filepath.Join(r.out, "schedule.json"), sched); err != nil {
		return err
	}
	if err := r.startTopologies(ctx); err != nil {
		return err
	}
	if err := r.startWorkers(); err != nil {
		return err
	}
	r.start = time.Now()
	fmt.Fprintf(r.log, "%s workers started; faults until %v, run ends at %v\n", r.stamp(), r.quiet(), r.duration)
	evCh, seenCh := make(chan []FaultEvent, 1), make(chan []FaultEvent, 1)
	go func() { evCh <- r.nemesis(ctx, sched) }()
	wctx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	go func() { seenCh <- r.watchMasters(wctx) }()
	sleep(ctx, r.duration)
	stopAt := now()
	r.stopWorkers()
	stopWatch()
	events := append(<-evCh, numberSeen(<-seenCh, len(sched))...)
	fmt.Fprintf(r.log, "%s workers stopped; draining %v\n", r.stamp(), r.lease+2*time.Second)
	sleep(ctx, r.lease+2*time.Second)
	keys := r.keyspace(ctx)
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("run interrupted: %w", err)
	}
	return r.finish(stopAt, events, keys)
}

func (r *runner) startTopologies(ctx context.Context) error {
	for _, name := range r.lay.Topos {
		var t *topology
		var err error
		switch name {
		case "sentinel":
			t, err = r.startSentinelTopology(ctx)
		case "redlock":
			t, err = r.startRedlockTopology()
		case "cluster":
			t, err = r.startClusterTopology(ctx)
		default:
			err = fmt.Errorf("unknown topology %q", name)
		}
		if err != nil {
			return fmt.Errorf("topology %s: %w", name, err)
		}
		r.topos[name] = t
		for _, s := range append(append([]*server(nil), t.data...), t.sentinels...) {
			r.servers[s.id] = s
		}
		fmt.Fprintf(r.log, "%s topology %s up\n", r.stamp(), name)
	}
	r.fixRestarts()
	return nil
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// dryRun prints the schedule the flags give, as schedule.json holds it.
func dryRun(c config) error {
	lay := layout{Topos: strings.Split(c.topoList, ","), Workers: c.nWorkers, Lease: c.lease, Clock: c.clock,
		Only: splitList(c.kinds)}
	b, err := json.MarshalIndent(makeSchedule(c.seed, lay, c.warmup(), c.quiet()), "", "  ")
	if err != nil {
		return fmt.Errorf("schedule: %w", err)
	}
	_, err = fmt.Println(string(b))
	return err
}
