package main

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/relock-go/relock/lock"
)

// The interleaved mode runs the uncontended pairs of every library in one
// window instead of one row after another: each goroutine does one
// Lock+Unlock of each library per round, in an order that rotates every
// round, and times each pair. On a machine whose round trip drifts between
// ~20 and ~100 µs within seconds, rows run one after another each catch
// their own stretch of it; pairs interleaved this finely all see the same
// one, so their ratios hold still where the rows' ratios flip.

// ilParts is how many parts the measured window is split into: a ratio is
// computed within each part, and the median and range of the parts'
// ratios are reported, so that one slow stretch shows as a range rather
// than moving the figure.
const ilParts = 5

// ilNames bounds the fresh names of one library (a name is reused after
// this many, spread over the goroutines): relock keeps a fencing-token
// counter per name for an hour, so unbounded fresh names would grow the
// server for the length of the run.
const ilNames = 1 << 18

// ilLib is one library of the interleaved mode.
type ilLib struct {
	name  string // as in the sequential table
	short string // in key names
	// reused makes the handle a goroutine keeps for its own key;
	// fresh makes one per acquisition, inside the timed pair, as a request
	// handler builds its lock for the name at hand.
	reused, fresh func(key string) handle
}

// ilFloor is the index of the raw floor in ilLibs, ilRelock relock's.
const (
	ilFloor  = 0
	ilRelock = 1
)

// ilLibs: every library on its own client of the single server, as in the
// sequential rows (the retry delay does not matter: nothing is contended).
func (e *env) ilLibs() []ilLib {
	raw := rawLib(e.single.raw, e.single.sha, time.Millisecond).make
	rs := redsyncLib(e.masterless(), time.Millisecond).make
	bsm := redislockLib(e.single.bsm, time.Millisecond).make
	rue := rueidisLib(e.rueidis).make
	c := e.single.relock
	return []ilLib{
		{name: libRaw, short: "raw", reused: raw, fresh: raw},
		// Reused: one *lock.Mutex per name, as relockLib shares it; fresh:
		// a new lock.New per acquisition (relockLib's map would keep
		// every fresh name's Mutex).
		{name: libRelock, short: "relock", reused: relockLib(c).make,
			fresh: func(key string) handle { return &relockHandle{mu: lock.New(c, key)} }},
		{name: libRedsync, short: "redsync", reused: rs, fresh: rs},
		{name: libRedislock, short: "redislock", reused: bsm, fresh: bsm},
		{name: libRueidis, short: "rueidislock", reused: rue, fresh: rue},
	}
}

// ilCombo is one table of the mode.
type ilCombo struct {
	goroutines int
	fresh      bool
}

func (c ilCombo) name() string {
	n := "reused"
	if c.fresh {
		n = "fresh"
	}
	return fmt.Sprintf("interleaved-%dg-%s", c.goroutines, n)
}

func (c ilCombo) title() string {
	g := "1 goroutine"
	if c.goroutines > 1 {
		g = fmt.Sprintf("%d goroutines", c.goroutines)
	}
	if c.fresh {
		return g + ", a fresh name per acquisition (bench:il:<lib>:<g>:<n>, a new lock value each time)"
	}
	return g + ", reused names (goroutine g always on bench:il:<lib>:<g>)"
}

// ilCombos lists the combinations, filtered by -only on their names.
func ilCombos(cfg *config) []ilCombo {
	var cs []ilCombo
	for _, g := range []int{1, 64} {
		for _, fresh := range []bool{false, true} {
			c := ilCombo{goroutines: g, fresh: fresh}
			if cfg.only == nil || cfg.only.MatchString(c.name()) {
				cs = append(cs, c)
			}
		}
	}
	return cs
}

// ilSteps lists the steps of the rotation for n libraries: the numbers
// below n prime to it, so that each makes a permutation.
func ilSteps(n int) []int {
	var s []int
	for m := 1; m < n; m++ {
		if gcd(m, n) == 1 {
			s = append(s, m)
		}
	}
	if len(s) == 0 {
		s = []int{1}
	}
	return s
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// ilOrder fills order with the libraries of round r, as indices below
// len(order): position p holds (r + p*step) mod n. Within n rounds the
// step is fixed and the start shifts by one each round, so each library
// takes each position once; the step then changes (through every number
// prime to n), so that no library always follows the same one: with 5
// libraries, over 20 rounds each follows each other one equally often.
func ilOrder(r int, order []int, steps []int) {
	n := len(order)
	m := steps[(r/n)%len(steps)]
	for p := range order {
		order[p] = (r + p*m) % n
	}
}

// ilCell is the pairs of one library in one part: their count and total
// time.
type ilCell struct {
	n   int64
	sum time.Duration
}

// ilStat is one goroutine's record; only its goroutine writes it.
type ilStat struct {
	cells   [ilParts][]ilCell // [part][library]
	lat     [][]time.Duration // [library], pairs started in the window
	errs    []int64
	lastErr []error
}

func newIlStat(libs, capacity int) *ilStat {
	st := &ilStat{lat: make([][]time.Duration, libs), errs: make([]int64, libs), lastErr: make([]error, libs)}
	for p := range st.cells {
		st.cells[p] = make([]ilCell, libs)
	}
	for i := range st.lat {
		st.lat[i] = make([]time.Duration, 0, capacity)
	}
	return st
}

// Parts of the interleaved window, in one atomic: ilWarmup, then 0 to
// ilParts-1, then ilStop.
const (
	ilWarmup = -1
	ilStop   = ilParts
)

// ilResult is what one combination measured, merged over its goroutines.
type ilResult struct {
	combo      ilCombo
	libs       []string
	cells      [ilParts][]ilCell
	lat        [][]time.Duration // sorted
	errs       []int64
	lastErr    []error
	rounds     int64 // pairs of the window / libraries
	window     time.Duration
	violations int64
	stuck      bool
	gDelta     int
}

// interleaved runs one combination: warm-up, then the window in ilParts
// equal parts, the part read by each pair when it starts.
func (e *env) interleaved(ctx context.Context, c ilCombo) *ilResult {
	libs := e.ilLibs()
	n := len(libs)
	var part atomic.Int32
	part.Store(ilWarmup)
	var viol atomic.Int64
	w := &workers{}
	stats := make([]*ilStat, c.goroutines)
	for g := range c.goroutines {
		st := newIlStat(n, latCap(e.cfg.ilDuration, c.goroutines)/n+1024)
		stats[g] = st
		gd := &guard{limit: 1, violations: &viol}
		w.goRun(func() { ilWorker(&part, libs, g, c, gd, st) })
	}

	res := &ilResult{combo: c}
	sleepCtx(ctx, e.cfg.warmup)
	t0 := time.Now()
	for p := range ilParts {
		if ctx.Err() != nil {
			break
		}
		part.Store(int32(p))
		sleepCtx(ctx, e.cfg.ilDuration/ilParts)
	}
	part.Store(ilStop)
	res.window = time.Since(t0)
	res.stuck = !w.wait(stuckLimit)
	res.violations = viol.Load()
	if res.stuck {
		return res
	}

	res.lat = make([][]time.Duration, n)
	res.errs = make([]int64, n)
	res.lastErr = make([]error, n)
	for p := range res.cells {
		res.cells[p] = make([]ilCell, n)
	}
	for i, l := range libs {
		res.libs = append(res.libs, l.name)
		for _, st := range stats {
			for p := range ilParts {
				res.cells[p][i].n += st.cells[p][i].n
				res.cells[p][i].sum += st.cells[p][i].sum
			}
			res.lat[i] = append(res.lat[i], st.lat[i]...)
			res.errs[i] += st.errs[i]
			if st.lastErr[i] != nil {
				res.lastErr[i] = st.lastErr[i]
			}
		}
		slices.Sort(res.lat[i])
		res.rounds += int64(len(res.lat[i]))
	}
	res.rounds /= int64(n)
	return res
}

// ilWorker is goroutine g: round after round, one pair of every library in
// the round's order, until the window ends. It starts at round g, so that
// the goroutines are spread over the positions from the start.
func ilWorker(part *atomic.Int32, libs []ilLib, g int, c ilCombo, gd *guard, st *ilStat) {
	n := len(libs)
	steps := ilSteps(n)
	order := make([]int, n)
	handles := make([]handle, n)
	prefix := make([]string, n) // of the fresh names
	for i, l := range libs {
		key := "bench:il:" + l.short + ":" + strconv.Itoa(g)
		prefix[i] = key + ":"
		if !c.fresh {
			handles[i] = l.reused(key)
		}
	}
	perG := max(ilNames/c.goroutines, 1)
	seq := 0
	for r := g; ; r++ {
		ilOrder(r, order, steps)
		if c.fresh {
			seq = (seq + 1) % perG
		}
		for _, i := range order {
			p := part.Load()
			if p == ilStop {
				return
			}
			h := handles[i]
			var key string
			if c.fresh {
				key = prefix[i] + strconv.Itoa(seq) // built outside the timed pair
			}
			t0 := time.Now()
			if c.fresh {
				h = libs[i].fresh(key)
			}
			if err := h.Lock(); err != nil {
				st.errs[i]++
				st.lastErr[i] = err
				time.Sleep(errPause)
				continue
			}
			gd.enter()
			gd.leave()
			err := h.Unlock()
			d := time.Since(t0)
			if err != nil {
				st.errs[i]++
				st.lastErr[i] = err
				continue
			}
			if p >= 0 {
				st.cells[p][i].n++
				st.cells[p][i].sum += d
				st.lat[i] = append(st.lat[i], d)
			}
		}
	}
}

// runInterleaved runs every combination once and prints its table.
func (e *env) runInterleaved(ctx context.Context, combos []ilCombo) error {
	fmt.Printf("\n=== interleaved uncontended pairs  (load average %s)\n", loadavg())
	printIlHeading(os.Stdout, e.cfg)
	for _, c := range combos {
		if ctx.Err() != nil {
			return nil
		}
		if err := e.flush(ctx); err != nil {
			return err
		}
		before := runtime.NumGoroutine()
		res := e.interleaved(ctx, c)
		res.gDelta = settleGoroutines(before) - before
		if res.stuck {
			fmt.Fprintf(os.Stderr, "bench: %s: workers still running %v after the window ended\n", c.name(), stuckLimit)
		}
		printIl(os.Stdout, res)
	}
	return nil
}
