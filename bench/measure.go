package main

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Phases of a row. Workers read the phase when they call Lock and again when
// they are done with the pair: a latency is recorded when the call started
// while measuring, an operation is counted when it completed while
// measuring, so both are read over the same window.
const (
	phaseWarmup int32 = iota
	phaseMeasure
	phaseStop
)

// gstat is one goroutine's record of a row. Only its goroutine writes it, so
// recording costs an append into a preallocated slice and nothing else.
type gstat struct {
	lat     []time.Duration // pair latency or wait, for calls started in the window
	ops     int64           // pairs or critical sections completed in the window
	holdSum time.Duration   // measured critical-section time, window ops
	holdN   int64
	relSum  time.Duration // measured release time (Unlock call to return), window ops
	relN    int64
	errs    int64
	lastErr error
}

func newGstat(capacity int) *gstat {
	return &gstat{lat: make([]time.Duration, 0, capacity)}
}

// released files how long a release took, for a release that ended in
// the window.
func (g *gstat) released(endPhase int32, d time.Duration) {
	if endPhase == phaseMeasure {
		g.relSum += d
		g.relN++
	}
}

// latCap is a generous guess of how many latencies one goroutine records, so
// that appends rarely grow the slice while measuring.
func latCap(d time.Duration, goroutines int) int {
	return int(d.Seconds()*40000)/goroutines + 1024
}

// record files one completed operation.
func (g *gstat) record(startPhase, endPhase int32, lat, hold time.Duration) {
	if startPhase == phaseMeasure {
		g.lat = append(g.lat, lat)
	}
	if endPhase == phaseMeasure {
		g.ops++
		if hold > 0 {
			g.holdSum += hold
			g.holdN++
		}
	}
}

func (g *gstat) fail(err error) {
	g.errs++
	g.lastErr = err
}

// spin holds the critical section for d of wall-clock time without sleeping
// (time.Sleep under a millisecond is far from precise), yielding between
// checks so the other goroutines of the process still run on a busy machine.
// It returns the time actually spent.
func spin(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	start := time.Now()
	for {
		el := time.Since(start)
		if el >= d {
			return el
		}
		runtime.Gosched()
	}
}

// sleep sleeps for d and returns how long it really slept: a sleep below
// a millisecond is far from precise, so the hold is measured, not assumed.
func sleep(d time.Duration) time.Duration {
	start := time.Now()
	time.Sleep(d)
	return time.Since(start)
}

// guard counts mutual-exclusion violations: more than limit inside at once.
type guard struct {
	inside     atomic.Int64
	limit      int64
	violations *atomic.Int64
}

func (g *guard) enter() {
	if g.inside.Add(1) > g.limit {
		g.violations.Add(1)
	}
}

func (g *guard) leave() { g.inside.Add(-1) }

// rwGuard counts reader/writer violations: a writer with anyone else inside,
// or a reader while a writer is inside. Each side increments its own counter
// before it looks at the other's, so of two overlapping entries at least one
// sees the other.
type rwGuard struct {
	readers, writers atomic.Int64
	violations       atomic.Int64
}

func (g *rwGuard) enterRead() {
	g.readers.Add(1)
	if g.writers.Load() > 0 {
		g.violations.Add(1)
	}
}

func (g *rwGuard) leaveRead() { g.readers.Add(-1) }

func (g *rwGuard) enterWrite() {
	if g.writers.Add(1) > 1 || g.readers.Load() > 0 {
		g.violations.Add(1)
	}
}

func (g *rwGuard) leaveWrite() { g.writers.Add(-1) }

// role is the merged record of one kind of worker in a row (the whole row
// for most scenarios; readers and writers apart for the RW row).
type role struct {
	name     string
	lat      []time.Duration // sorted
	perG     []int64
	ops      int64
	holdMean time.Duration
	relMean  time.Duration // mean release time, where measured
	errs     int64
	lastErr  error
}

func merge(name string, gs []*gstat) role {
	r := role{name: name}
	n := 0
	for _, g := range gs {
		n += len(g.lat)
	}
	r.lat = make([]time.Duration, 0, n)
	var holdSum time.Duration
	var holdN, relN int64
	var relSum time.Duration
	for _, g := range gs {
		r.lat = append(r.lat, g.lat...)
		r.perG = append(r.perG, g.ops)
		r.ops += g.ops
		holdSum += g.holdSum
		holdN += g.holdN
		relSum += g.relSum
		relN += g.relN
		r.errs += g.errs
		if g.lastErr != nil {
			r.lastErr = g.lastErr
		}
	}
	slices.Sort(r.lat)
	if holdN > 0 {
		r.holdMean = holdSum / time.Duration(holdN)
	}
	if relN > 0 {
		r.relMean = relSum / time.Duration(relN)
	}
	return r
}

// pct returns the q-quantile (0..1) of sorted latencies, nearest rank.
func pct(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted))+0.999999999) - 1
	i = max(0, min(i, len(sorted)-1))
	return sorted[i]
}

func (r role) p(q float64) time.Duration { return pct(r.lat, q) }

func (r role) maxLat() time.Duration {
	if len(r.lat) == 0 {
		return 0
	}
	return r.lat[len(r.lat)-1]
}

func (r role) fairness() (lo, hi int64) {
	if len(r.perG) == 0 {
		return 0, 0
	}
	return slices.Min(r.perG), slices.Max(r.perG)
}

// cpuSample is a point-in-time reading of the CPU time spent by the
// redis-server processes of a row and by this process.
type cpuSample struct {
	server time.Duration
	client time.Duration
	ok     bool // every server's /proc entry could be read
}

// clockTick is USER_HZ, the unit of utime and stime in /proc/<pid>/stat: 100
// on every Linux architecture Go supports.
const clockTick = 10 * time.Millisecond

func sampleCPU(pids []int) cpuSample {
	s := cpuSample{ok: true}
	for _, pid := range pids {
		d, err := procCPU(pid)
		if err != nil {
			s.ok = false
			continue
		}
		s.server += d
	}
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err == nil {
		s.client = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	return s
}

// procCPU reads utime+stime of pid from /proc/<pid>/stat.
func procCPU(pid int) (time.Duration, error) {
	if pid <= 0 {
		return 0, errors.New("no process")
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	return parseStat(string(b))
}

// parseStat extracts utime+stime (fields 14 and 15) from a /proc/<pid>/stat
// line. The command name (field 2) is in parentheses and may hold spaces, so
// fields are counted from the last ')'.
func parseStat(s string) (time.Duration, error) {
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("stat: no ')' in %q", s)
	}
	f := strings.Fields(s[i+1:]) // f[0] is field 3 (state)
	if len(f) < 13 {
		return 0, fmt.Errorf("stat: %d fields after the name", len(f))
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("stat: %w", err)
	}
	return time.Duration(ut+st) * clockTick, nil
}

// pool of workers of one row: start them, flip phases, wait for them.
type workers struct {
	phase atomic.Int32
	wg    sync.WaitGroup
}

func (w *workers) load() int32 { return w.phase.Load() }

func (w *workers) goRun(f func()) {
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		f()
	}()
}

// wait waits for the workers up to limit and reports whether they all ended.
func (w *workers) wait(limit time.Duration) bool {
	done := make(chan struct{})
	go func() {
		w.wg.Wait()
		close(done)
	}()
	t := time.NewTimer(limit)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	}
}
