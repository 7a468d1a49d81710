// Command bench runs relock side by side with its peers (redsync,
// bsm/redislock, rueidislock) and the raw-command floor, on redis-server
// processes it starts on loopback, and prints one table per run. See
// README.md in this directory.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"regexp"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis/rueidislock"
)

type config struct {
	duration time.Duration
	warmup   time.Duration
	runs     int
	only     *regexp.Regexp
	hold     time.Duration
	retries  []time.Duration
	noLoop   bool
	cmdStats bool
	// The interleaved mode (interleaved.go): its window, and whether it
	// runs alone.
	ilDuration time.Duration
	ilOnly     bool
	// The -rtt sweep (rtt.go) and where -svg writes its charts (svg.go).
	rtts   []time.Duration
	svgDir string
}

func main() {
	var cfg config
	var only, retries string
	flag.DurationVar(&cfg.duration, "duration", 3*time.Second, "measured time of each row")
	flag.DurationVar(&cfg.warmup, "warmup", 300*time.Millisecond, "unmeasured warm-up before each row")
	flag.IntVar(&cfg.runs, "runs", 2, "how many times to run every row (one table per run)")
	flag.StringVar(&only, "only", "", `run only the rows whose "scenario/library" matches this regexp`)
	flag.DurationVar(&cfg.hold, "hold", 100*time.Microsecond, "critical section of the contended rows (spun, not slept)")
	flag.StringVar(&retries, "retry", "1ms,5ms", "retry delays of the polling peers in the contended row")
	flag.BoolVar(&cfg.noLoop, "rueidis-noloop", false, "run rueidislock with NoLoopTracking (its README's advice for Redis >= 7.0.5; it stalled under in-process contention here)")
	flag.BoolVar(&cfg.cmdStats, "cmdstats", false, "print the Redis commands each row ran per op in its measured window (INFO commandstats)")
	flag.DurationVar(&cfg.ilDuration, "interleaved-duration", 5*time.Second, "measured time of each interleaved table (split into 5 parts)")
	flag.BoolVar(&cfg.ilOnly, "interleaved-only", false, "run only the interleaved uncontended tables, not the sequential rows")
	flag.BoolVar(&contextTimeout, "context-timeout", false, "give every go-redis client ContextTimeoutEnabled (a relock release then runs on the caller's goroutine)")
	rtts := flag.String("rtt", "", "run the u1, 64g, onekey and redlock rows at each of these round-trip times (e.g. 0,0.2ms,1ms,2ms), through a toxiproxy on loopback; no interleaved tables then")
	flag.StringVar(&cfg.svgDir, "svg", "", "with -rtt: write SVG charts of the last run into this directory")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the whole run to this file (go tool pprof)")
	flag.Parse()

	var err error
	if only != "" {
		if cfg.only, err = regexp.Compile(only); err != nil {
			fmt.Fprintf(os.Stderr, "bench: -only: %v\n", err)
			os.Exit(2)
		}
	}
	for f := range strings.SplitSeq(retries, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(f))
		if err != nil || d <= 0 {
			fmt.Fprintf(os.Stderr, "bench: -retry: bad delay %q\n", f)
			os.Exit(2)
		}
		cfg.retries = append(cfg.retries, d)
	}
	if err := cfg.setRTT(*rtts); err != nil {
		fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		os.Exit(2)
	}
	if cfg.runs < 1 || cfg.duration <= 0 || cfg.ilDuration <= 0 {
		fmt.Fprintln(os.Stderr, "bench: -runs must be >= 1, -duration and -interleaved-duration > 0")
		os.Exit(2)
	}

	// The first SIGINT/SIGTERM ends the current row and the program, with
	// the servers stopped; a second one kills at once (the servers die
	// with us: redistest ties them to this process on Linux).
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop()
	}()

	stopProfile := func() {}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "bench: -cpuprofile: %v\n", err)
			os.Exit(2)
		}
		stopProfile = func() {
			pprof.StopCPUProfile()
			f.Close()
		}
	}

	err = run(ctx, &cfg)
	stopProfile()
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		os.Exit(1)
	}
	if ctx.Err() != nil {
		fmt.Fprintln(os.Stderr, "bench: interrupted")
		os.Exit(130)
	}
}

// setRTT reads -rtt, and checks that -svg has it.
func (cfg *config) setRTT(list string) error {
	var err error
	if cfg.rtts, err = parseRTT(list); err != nil {
		return fmt.Errorf("-rtt: %w", err)
	}
	if cfg.svgDir != "" && len(cfg.rtts) == 0 {
		return errors.New("-svg needs -rtt")
	}
	return nil
}

// node is one redis-server and one client per go-redis based library, all
// with the same options.
type node struct {
	srv                       *server
	addr                      string           // where the clients connect: srv.Addr, or proxy's
	proxy                     *toxiproxy.Proxy // nil on loopback
	raw, relock, redsync, bsm *redis.Client
	sha                       string // compare-and-delete, loaded on raw
	version                   string
}

func (n *node) clients() []*redis.Client { return []*redis.Client{n.raw, n.relock, n.redsync, n.bsm} }

type env struct {
	cfg     *config
	dir     string
	single  *node
	masters []*node
	rueidis rueidislock.Locker
	views   map[time.Duration]*env // the same servers at each -rtt distance
}

func run(ctx context.Context, cfg *config) (err error) {
	// The sequential rows, each run -runs times, then the interleaved
	// tables once.
	var plan []rowSpec
	var combos []ilCombo
	switch {
	case len(cfg.rtts) > 0:
		plan = rttRows(cfg)
	case cfg.ilOnly:
		combos = ilCombos(cfg)
	default:
		plan, combos = rows(cfg), ilCombos(cfg)
	}
	if len(plan) == 0 && len(combos) == 0 {
		return errors.New("-only matches no row")
	}
	needMasters := false
	for _, r := range plan {
		if r.masters {
			needMasters = true
		}
	}

	dir, err := os.MkdirTemp("", "relock-bench-")
	if err != nil {
		return err
	}
	e := &env{cfg: cfg, dir: dir}
	defer func() {
		e.close()
		_ = os.RemoveAll(dir)
	}()

	if err := e.start(ctx, needMasters); err != nil {
		return err
	}

	runs := cfg.runs
	if len(plan) == 0 {
		runs = 0
	}
	est := time.Duration(len(plan)*runs)*(cfg.duration+cfg.warmup+150*time.Millisecond) +
		time.Duration(len(combos))*(cfg.ilDuration+cfg.warmup+150*time.Millisecond)
	fmt.Printf("relock bench: %d rows x %d runs, row %v + warm-up %v; %d interleaved tables of %v; about %v; redis-server %s, GOMAXPROCS %d, NumCPU %d\n",
		len(plan), runs, cfg.duration, cfg.warmup, len(combos), cfg.ilDuration, est.Round(time.Second),
		e.single.version, runtime.GOMAXPROCS(0), runtime.NumCPU())

	startG := runtime.NumGoroutine()
	var last []*result
	for i := range runs {
		fmt.Printf("\n=== run %d/%d  (load average %s)\n", i+1, cfg.runs, loadavg())
		if last, err = e.runOnce(ctx, plan); err != nil {
			return err
		}
		if ctx.Err() != nil {
			return nil
		}
	}
	if cfg.svgDir != "" && len(last) > 0 {
		files, err := writeCharts(cfg.svgDir, cfg.rtts, last)
		if err != nil {
			return fmt.Errorf("-svg: %w", err)
		}
		fmt.Printf("\ncharts: %s\n", strings.Join(files, " "))
	}
	if len(combos) > 0 {
		if err := e.runInterleaved(ctx, combos); err != nil {
			return err
		}
	}
	settleGoroutines(startG)
	fmt.Printf("\ngoroutines: %d before the first row, %d after the last\n", startG, runtime.NumGoroutine())
	return nil
}

// start launches the single server, the five masters if asked, and the
// rueidislock locker.
func (e *env) start(ctx context.Context, masters bool) error {
	var err error
	if e.single, err = e.launch(ctx); err != nil {
		return err
	}
	if masters {
		for range 5 {
			n, err := e.launch(ctx)
			if err != nil {
				return err
			}
			e.masters = append(e.masters, n)
		}
	}
	if e.cfg.noLoop && !versionAtLeast(e.single.version, 7, 0, 5) {
		return fmt.Errorf("-rueidis-noloop needs Redis >= 7.0.5, have %s", e.single.version)
	}
	if e.rueidis, err = newRueidisLocker(e.single.srv.Addr, e.cfg.noLoop); err != nil {
		return fmt.Errorf("rueidislock: %w", err)
	}
	return nil
}

// runOnce runs every row of plan once and prints its table and ratios.
func (e *env) runOnce(ctx context.Context, plan []rowSpec) ([]*result, error) {
	var results []*result
	for _, r := range plan {
		if ctx.Err() != nil {
			break
		}
		if err := e.flush(ctx); err != nil {
			return nil, err
		}
		re := e
		if r.at != nil {
			var err error
			if re, err = e.at(ctx, *r.at); err != nil {
				return nil, err
			}
		}
		before := runtime.NumGoroutine()
		res := r.run(ctx, re)
		res.gDelta = settleGoroutines(before) - before
		res.scenario, res.label, res.family, res.kind, res.at = r.scenario, r.label, r.family, r.kind, r.at
		results = append(results, res)
		if res.stuck {
			fmt.Fprintf(os.Stderr, "bench: %s/%s: workers still running %v after the row ended\n", r.name(), r.label, stuckLimit)
		}
	}
	printTable(os.Stdout, results)
	if len(e.cfg.rtts) == 0 {
		printRatios(os.Stdout, results)
	}
	for _, d := range e.cfg.rtts {
		var at []*result
		for _, r := range results {
			if r.at != nil && *r.at == d {
				at = append(at, r)
			}
		}
		if len(at) > 0 {
			fmt.Printf("\n--- at round-trip time %s", fmtRTT(d))
			printRatios(os.Stdout, at)
		}
	}
	if e.cfg.cmdStats {
		printCmdStats(os.Stdout, results)
	}
	return results, nil
}

// launch starts one redis-server and its clients.
func (e *env) launch(ctx context.Context) (*node, error) {
	srv, err := launchServer(e.dir)
	if err != nil {
		return nil, err
	}
	n := &node{srv: srv, addr: srv.Addr}
	n.raw, n.relock, n.redsync, n.bsm = newGoRedis(srv.Addr), newGoRedis(srv.Addr), newGoRedis(srv.Addr), newGoRedis(srv.Addr)
	if n.sha, err = loadCAD(ctx, n.raw); err != nil {
		n.close()
		return nil, fmt.Errorf("SCRIPT LOAD: %w", err)
	}
	info, err := n.raw.Info(ctx, "server").Result()
	if err != nil {
		n.close()
		return nil, fmt.Errorf("INFO: %w", err)
	}
	for l := range strings.SplitSeq(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), "redis_version:"); ok {
			n.version = v
		}
	}
	return n, nil
}

func (n *node) close() {
	for _, c := range n.clients() {
		if c != nil {
			_ = c.Close()
		}
	}
	// A node seen through a proxy shares its server with the direct one.
	if n.proxy != nil {
		n.proxy.Stop()
		return
	}
	n.srv.Stop()
}

func (e *env) nodes() []*node {
	var ns []*node
	if e.single != nil {
		ns = append(ns, e.single)
	}
	return append(ns, e.masters...)
}

func (e *env) close() {
	for _, v := range e.views {
		v.close()
	}
	if e.rueidis != nil {
		e.rueidis.Close()
	}
	for _, n := range e.nodes() {
		n.close()
	}
}

// flush empties every server between rows. Scripts survive FLUSHALL.
func (e *env) flush(ctx context.Context) error {
	for _, n := range e.nodes() {
		if err := n.raw.FlushAll(ctx).Err(); err != nil && ctx.Err() == nil {
			return fmt.Errorf("FLUSHALL %s: %w", n.srv.Addr, err)
		}
	}
	return nil
}

func (e *env) masterClients(pick func(*node) *redis.Client) []*redis.Client {
	cs := make([]*redis.Client, len(e.masters))
	for i, n := range e.masters {
		cs[i] = pick(n)
	}
	return cs
}

func (e *env) masterPids() []int {
	pids := make([]int, len(e.masters))
	for i, n := range e.masters {
		pids[i] = n.srv.Pid()
	}
	return pids
}

func versionAtLeast(v string, want ...int) bool {
	parts := strings.Split(v, ".")
	for i, w := range want {
		if i >= len(parts) {
			return false
		}
		n, err := strconv.Atoi(parts[i])
		if err != nil {
			return false
		}
		if n != w {
			return n > w
		}
	}
	return true
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// settleGoroutines gives goroutines that end on their own (a library's
// background releases) a moment to go before they are counted.
func settleGoroutines(target int) int {
	deadline := time.Now().Add(500 * time.Millisecond)
	for runtime.NumGoroutine() > target && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	return runtime.NumGoroutine()
}
