package main

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/relock-go/relock/lock"
	"github.com/relock-go/relock/rwlock"
	"github.com/relock-go/relock/semaphore"
)

// Scenario names.
const (
	sc1g         = "1g-distinct"
	sc64g        = "64g-distinct"
	scOneKey     = "16g-onekey-100us"
	scRedlock    = "redlock-5"
	scRedlockNew = "redlock-5-new"
	scReentrant  = "reentrant"
	scRW         = "rw-16r-1w"
	scSem        = "sem-32-on-4"
	scSemSlept   = "sem-32-on-4-slept"
	scFair       = "fair-16g-4c-100us"
	scOneKey4c   = "16g-4c-onekey-100us"
)

// What the latency columns of a row measure.
const (
	kindPair = "pair" // Lock call to Unlock return
	kindWait = "wait" // Lock call to acquired
)

// stuckLimit bounds the wait for a row's workers after it ended; a worker
// still running then is waiting for a lock that is not coming.
// It is longer than bsm/redislock's 30 s Obtain deadline.
const stuckLimit = 35 * time.Second

// rowSpec is one row of the table: a scenario run with one library.
type rowSpec struct {
	scenario string
	label    string
	family   string
	kind     string
	masters  bool           // needs the five Redlock masters
	at       *time.Duration // the -rtt distance the row runs at; nil on loopback without -rtt
	run      func(ctx context.Context, e *env) *result
}

// name is the row's scenario as the table and -only show it: the short
// name and the distance for a row of the -rtt sweep.
func (r rowSpec) name() string { return rowName(r.scenario, r.at) }

// result is what a row measured.
type result struct {
	scenario, label, family, kind string
	at                            *time.Duration // as rowSpec.at

	window     time.Duration // measured wall time
	roles      []role        // one, or read and write for the RW row
	violations int64
	cpu0, cpu1 cpuSample
	hold       time.Duration // target critical section, 0 for none
	permits    int           // semaphore size, 0 otherwise
	stuck      bool
	gDelta     int                // goroutines left over after the row
	cmds       map[string]cmdStat // -cmdstats: the window's commands
}

// rows lists the table's rows in order, filtered by -only.
func rows(cfg *config) []rowSpec {
	var out []rowSpec
	for _, r := range allRows(cfg) {
		if cfg.only == nil || cfg.only.MatchString(r.scenario+"/"+r.label) {
			out = append(out, r)
		}
	}
	return out
}

// allRows lists every row of the table in order.
func allRows(cfg *config) []rowSpec {
	var all []rowSpec
	add := func(r rowSpec) { all = append(all, r) }
	uncontendedRows(add)
	contendedRows(cfg, add)
	redlockRows(add)
	relockOnlyRows(cfg, add)
	return all
}

func uncontendedRows(add func(rowSpec)) {
	// Uncontended pairs: one key per goroutine.
	for _, sc := range []struct {
		name string
		g    int
	}{{sc1g, 1}, {sc64g, 64}} {
		key := func(i int) string { return fmt.Sprintf("bench:%s:%d", sc.name, i) }
		single := func(pick func(e *env) lib) func(context.Context, *env) *result {
			return func(ctx context.Context, e *env) *result {
				return e.mutexRow(ctx, pick(e), sc.g, key, 0, kindPair, e.singlePid)
			}
		}
		for _, l := range []struct {
			label string
			pick  func(e *env) lib
		}{
			{libRaw, func(e *env) lib { return rawLib(e.single.raw, e.single.sha, time.Millisecond) }},
			{libRelock, func(e *env) lib { return relockLib(e.single.relock) }},
			{libRedsync, func(e *env) lib { return redsyncLib(e.masterless(), time.Millisecond) }},
			{libRedislock, func(e *env) lib { return redislockLib(e.single.bsm, time.Millisecond) }},
			{libRueidis, func(e *env) lib { return rueidisLib(e.rueidis) }},
		} {
			add(rowSpec{scenario: sc.name, label: l.label, family: l.label, kind: kindPair, run: single(l.pick)})
		}
	}

}

func contendedRows(cfg *config, add func(rowSpec)) {
	// Contended: 16 goroutines on one key, ~100 µs critical sections. The
	// polling peers run at every retry delay of -retry.
	oneKey := func(int) string { return "bench:onekey" }
	contended := func(pick func(e *env) lib) func(context.Context, *env) *result {
		return func(ctx context.Context, e *env) *result {
			return e.mutexRow(ctx, pick(e), 16, oneKey, cfg.hold, kindWait, e.singlePid)
		}
	}
	for _, d := range cfg.retries {
		add(rowSpec{scenario: scOneKey, label: tuned(libRaw, d), family: libRaw, kind: kindWait,
			run: contended(func(e *env) lib { return rawLib(e.single.raw, e.single.sha, d) })})
	}
	add(rowSpec{scenario: scOneKey, label: libRelock, family: libRelock, kind: kindWait,
		run: contended(func(e *env) lib { return relockLib(e.single.relock) })})
	for _, d := range cfg.retries {
		add(rowSpec{scenario: scOneKey, label: tuned(libRedsync, d), family: libRedsync, kind: kindWait,
			run: contended(func(e *env) lib { return redsyncLib(e.masterless(), d) })})
	}
	for _, d := range cfg.retries {
		add(rowSpec{scenario: scOneKey, label: tuned(libRedislock, d), family: libRedislock, kind: kindWait,
			run: contended(func(e *env) lib { return redislockLib(e.single.bsm, d) })})
	}
	add(rowSpec{scenario: scOneKey, label: libRueidis, family: libRueidis, kind: kindWait,
		run: contended(func(e *env) lib { return rueidisLib(e.rueidis) })})

	// Fair: the contended row's 16 goroutines over 4 clients (processes),
	// first come, first served across them; beside it the lock on the
	// same 4 clients, whose releases hand over within a client.
	overClients := func(fair bool) func(context.Context, *env) *result {
		return func(ctx context.Context, e *env) *result {
			clients := make([]*redis.Client, 4)
			for i := range clients {
				clients[i] = newGoRedis(e.single.srv.Addr)
				defer clients[i].Close()
			}
			return e.mutexRow(ctx, spreadLib(clients, fair), 16, oneKey, cfg.hold, kindWait, e.singlePid)
		}
	}
	add(rowSpec{scenario: scOneKey4c, label: libRelock, family: libRelock, kind: kindWait, run: overClients(false)})
	add(rowSpec{scenario: scFair, label: libRelock, family: libRelock, kind: kindWait, run: overClients(true)})

}

func redlockRows(add func(rowSpec)) {
	// Redlock over five masters, one goroutine.
	rlKey := func(int) string { return "bench:redlock" }
	redlockRow := func(pick func(e *env) lib) func(context.Context, *env) *result {
		return func(ctx context.Context, e *env) *result {
			return e.mutexRow(ctx, pick(e), 1, rlKey, 0, kindPair, e.masterPids)
		}
	}
	// The same, once with one lock value per goroutine and once with a new
	// one per acquisition, as a request handler builds it.
	for _, sc := range []struct {
		name string
		wrap func(lib) lib
	}{{scRedlock, func(l lib) lib { return l }}, {scRedlockNew, perAcquisition}} {
		add(rowSpec{scenario: sc.name, label: libRaw, family: libRaw, kind: kindPair, masters: true,
			run: redlockRow(func(e *env) lib {
				return sc.wrap(rawRedlockLib(e.masterClients(func(n *node) *redisClient { return n.raw }), e.masterShas()))
			})})
		add(rowSpec{scenario: sc.name, label: libRelock, family: libRelock, kind: kindPair, masters: true,
			run: redlockRow(func(e *env) lib {
				return sc.wrap(relockRedlockLib(e.masterClients(func(n *node) *redisClient { return n.relock })))
			})})
		add(rowSpec{scenario: sc.name, label: libRedsync, family: libRedsync, kind: kindPair, masters: true,
			run: redlockRow(func(e *env) lib {
				return sc.wrap(redsyncLib(e.masterClients(func(n *node) *redisClient { return n.redsync }), time.Millisecond))
			})})
	}

}

func relockOnlyRows(cfg *config, add func(rowSpec)) {
	// relock only.
	add(rowSpec{scenario: scReentrant, label: libRelock, family: libRelock, kind: kindPair,
		run: func(ctx context.Context, e *env) *result { return e.reentrantRow(ctx) }})
	add(rowSpec{scenario: scRW, label: libRelock, family: libRelock, kind: kindWait,
		run: func(ctx context.Context, e *env) *result { return e.rwRow(ctx, 16, 1, cfg.hold) }})
	// The semaphore rows, each beside two floors run the same way: a
	// buffered channel (no network: what this machine's CPU allows 32
	// goroutines and 4 holders) and a raw Redis semaphore of 4 tokens in a
	// list, BLPOP to take one and LPUSH to give it back (one command each
	// way, no lease, no fencing: not crash-safe, a floor only).
	//
	// The slept rows hold by sleeping: on a machine with fewer cores than
	// permits, four spinning holders and the client's own work compete for
	// the CPU, and the spun row measures that contention as much as the
	// semaphore. A slept hold leaves the CPU to the semaphore; its real
	// length is measured and is the ceiling's.
	for _, sc := range []struct {
		name    string
		holdFor func(time.Duration) time.Duration
	}{{scSem, spin}, {scSemSlept, sleep}} {
		for _, impl := range []struct {
			label string
			make  func(e *env) takePermit
		}{
			{libInProcess, func(*env) takePermit { return chanPermits(semPermits) }},
			{libRaw, func(e *env) takePermit { return rawPermits(e.single.raw, "bench:semraw", semPermits) }},
			{libRelock, func(e *env) takePermit { return relockPermits(e.single.relock, "bench:sem", semPermits) }},
		} {
			add(rowSpec{scenario: sc.name, label: impl.label, family: impl.label, kind: kindWait,
				run: func(ctx context.Context, e *env) *result {
					return e.semRow(ctx, impl.make(e), 32, semPermits, cfg.hold, sc.holdFor)
				}})
		}
	}
}

func (e *env) singlePid() []int { return []int{e.single.srv.Pid()} }

// masterless is the single server as redsync's one pool.
func (e *env) masterless() []*redisClient { return []*redisClient{e.single.redsync} }

func (e *env) masterShas() []string {
	shas := make([]string, len(e.masters))
	for i, n := range e.masters {
		shas[i] = n.sha
	}
	return shas
}

// measure runs a row whose workers are started: warm-up, then the measured
// window between two CPU samples, then stop and wait for the workers.
func (e *env) measure(ctx context.Context, pids func() []int, w *workers, res *result) {
	sleepCtx(ctx, e.cfg.warmup)
	p := pids()
	if e.cfg.cmdStats {
		e.resetCmdStats(ctx)
	}
	res.cpu0 = sampleCPU(p)
	t0 := time.Now()
	w.phase.Store(phaseMeasure)
	sleepCtx(ctx, e.cfg.duration)
	w.phase.Store(phaseStop)
	res.window = time.Since(t0)
	res.cpu1 = sampleCPU(p)
	if e.cfg.cmdStats {
		res.cmds = e.readCmdStats(ctx)
	}
	res.stuck = !w.wait(stuckLimit)
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// errPause keeps a worker whose Lock fails from spinning on the error.
const errPause = 10 * time.Millisecond

// mutexRow runs n goroutines, goroutine i taking key(i) with library l, each
// holding its critical section for hold (spun). kind says whether the
// latency is the whole pair or the wait to acquire.
func (e *env) mutexRow(ctx context.Context, l lib, n int, key func(int) string, hold time.Duration, kind string, pids func() []int) *result {
	res := &result{hold: hold}
	var viol atomic.Int64
	guards := map[string]*guard{}
	w := &workers{}
	stats := make([]*gstat, n)
	for i := range n {
		k := key(i)
		g := guards[k]
		if g == nil {
			g = &guard{limit: 1, violations: &viol}
			guards[k] = g
		}
		h := l.make(k)
		st := newGstat(latCap(e.cfg.duration, n))
		stats[i] = st
		w.goRun(func() { mutexWorker(w, h, g, hold, kind == kindWait, st) })
	}
	e.measure(ctx, pids, w, res)
	if !res.stuck {
		res.roles = []role{merge("", stats)}
	}
	res.violations = viol.Load()
	return res
}

func mutexWorker(w *workers, h handle, g *guard, hold time.Duration, waitOnly bool, st *gstat) {
	for {
		ps := w.load()
		if ps == phaseStop {
			return
		}
		t0 := time.Now()
		if err := h.Lock(); err != nil {
			st.fail(err)
			time.Sleep(errPause)
			continue
		}
		t1 := time.Now()
		g.enter()
		held := spin(hold)
		g.leave()
		err := h.Unlock()
		t2 := time.Now()
		if err != nil {
			st.fail(err)
		}
		lat := t2.Sub(t0)
		if waitOnly {
			lat = t1.Sub(t0)
		}
		st.record(ps, w.load(), lat, held)
	}
}

// reentrantRow: one goroutine holds a lock and measures Lock+Unlock pairs of
// an inner re-entry on the outer hold's context.
func (e *env) reentrantRow(ctx context.Context) *result {
	res := &result{}
	mu := lock.New(e.single.relock, "bench:reentrant")
	outer, err := mu.Lock(context.Background())
	if err != nil {
		st := newGstat(0)
		st.fail(err)
		res.roles = []role{merge("", []*gstat{st})}
		return res
	}
	var viol atomic.Int64
	g := &guard{limit: 1, violations: &viol}
	w := &workers{}
	st := newGstat(latCap(e.cfg.duration, 1))
	w.goRun(func() {
		for {
			ps := w.load()
			if ps == phaseStop {
				return
			}
			t0 := time.Now()
			inner, err := mu.Lock(outer)
			if err != nil {
				st.fail(err)
				time.Sleep(errPause)
				continue
			}
			g.enter()
			g.leave()
			if err := mu.Unlock(inner); err != nil {
				st.fail(err)
			}
			st.record(ps, w.load(), time.Since(t0), 0)
		}
	})
	e.measure(ctx, e.singlePid, w, res)
	if err := mu.Unlock(outer); err != nil {
		st.fail(fmt.Errorf("outer unlock: %w", err))
	}
	if !res.stuck {
		res.roles = []role{merge("", []*gstat{st})}
	}
	res.violations = viol.Load()
	return res
}

// rwRow: readers and writers on one rwlock.RWMutex, each holding ~hold.
func (e *env) rwRow(ctx context.Context, readers, writers int, hold time.Duration) *result {
	res := &result{hold: hold}
	rw := rwlock.New(e.single.relock, "bench:rw")
	var g rwGuard
	w := &workers{}
	rstats := make([]*gstat, readers)
	wstats := make([]*gstat, writers)
	for i := range readers {
		st := newGstat(latCap(e.cfg.duration, readers))
		rstats[i] = st
		w.goRun(func() { rwWorker(w, st, rw.RLock, rw.RUnlock, g.enterRead, g.leaveRead, hold) })
	}
	for i := range writers {
		st := newGstat(latCap(e.cfg.duration, 1))
		wstats[i] = st
		w.goRun(func() { rwWorker(w, st, rw.Lock, rw.Unlock, g.enterWrite, g.leaveWrite, hold) })
	}
	e.measure(ctx, e.singlePid, w, res)
	if !res.stuck {
		res.roles = []role{merge("read", rstats), merge("write", wstats)}
	}
	res.violations = g.violations.Load()
	return res
}

// semPermits is the size of the semaphore rows' semaphores.
const semPermits = 4

// takePermit takes a permit of a semaphore (relock's, or a floor) and
// returns how to give it back.
type takePermit func(ctx context.Context) (release func() error, err error)

func relockPermits(c *redisClient, name string, size int) takePermit {
	s := semaphore.New(c, name, int64(size))
	return func(ctx context.Context) (func() error, error) {
		held, err := s.Acquire(ctx, 1)
		if err != nil {
			return nil, err
		}
		return func() error { return s.Release(held) }, nil
	}
}

// rawPermits is the raw-command floor: size tokens in a list, BLPOP and
// LPUSH. The list is written afresh for each row, in one round trip; if
// that fails, every take reports it.
func rawPermits(c *redisClient, key string, size int) takePermit {
	tokens := make([]any, size)
	for i := range tokens {
		tokens[i] = "t"
	}
	_, err := c.TxPipelined(context.Background(), func(p redis.Pipeliner) error {
		p.Del(context.Background(), key)
		p.RPush(context.Background(), key, tokens...)
		p.Expire(context.Background(), key, time.Hour)
		return nil
	})
	return func(ctx context.Context) (func() error, error) {
		if err != nil {
			return nil, err
		}
		if err := c.BLPop(ctx, 0, key).Err(); err != nil {
			return nil, err
		}
		return func() error { return c.LPush(context.Background(), key, "t").Err() }, nil
	}
}

// chanPermits is the in-process floor: a buffered channel of size tokens.
func chanPermits(size int) takePermit {
	ch := make(chan struct{}, size)
	return func(ctx context.Context) (func() error, error) {
		select {
		case ch <- struct{}{}:
			return func() error { <-ch; return nil }, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// semRow: n goroutines take one permit with take (a semaphore of size
// permits), hold ~hold (spun or slept: holdFor), give it back.
func (e *env) semRow(ctx context.Context, take takePermit, n, permits int, hold time.Duration, holdFor func(time.Duration) time.Duration) *result {
	res := &result{hold: hold, permits: permits}
	var viol atomic.Int64
	g := &guard{limit: int64(permits), violations: &viol}
	w := &workers{}
	stats := make([]*gstat, n)
	for i := range n {
		st := newGstat(latCap(e.cfg.duration, n))
		stats[i] = st
		w.goRun(func() {
			for {
				ps := w.load()
				if ps == phaseStop {
					return
				}
				t0 := time.Now()
				release, err := take(context.Background())
				if err != nil {
					st.fail(err)
					time.Sleep(errPause)
					continue
				}
				t1 := time.Now()
				g.enter()
				h := holdFor(hold)
				g.leave()
				t2 := time.Now()
				if err := release(); err != nil {
					st.fail(err)
				}
				end := w.load()
				st.released(end, time.Since(t2))
				st.record(ps, end, t1.Sub(t0), h)
			}
		})
	}
	e.measure(ctx, e.singlePid, w, res)
	if !res.stuck {
		res.roles = []role{merge("", stats)}
	}
	res.violations = viol.Load()
	return res
}

// rwWorker takes one side of an RWMutex in a loop (lock/unlock: RLock and
// RUnlock, or Lock and Unlock), spinning hold inside, and records the wait.
func rwWorker(w *workers, st *gstat, lock func(context.Context, ...rwlock.LockOption) (context.Context, error),
	unlock func(context.Context) error, enter, leave func(), hold time.Duration) {
	for {
		ps := w.load()
		if ps == phaseStop {
			return
		}
		t0 := time.Now()
		held, err := lock(context.Background())
		if err != nil {
			st.fail(err)
			time.Sleep(errPause)
			continue
		}
		t1 := time.Now()
		enter()
		h := spin(hold)
		leave()
		if err := unlock(held); err != nil {
			st.fail(err)
		}
		st.record(ps, w.load(), t1.Sub(t0), h)
	}
}
