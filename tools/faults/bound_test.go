//go:build faults && linux

package faults

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/internal/testkit/redistest"
)

// The bounds every call of the table must keep, and how the table runs.
const (
	// boundAcquire is the deadline of the acquiring context given to Lock,
	// TryLock, Acquire and the acquiring half of Do: their bound.
	boundAcquire = 300 * time.Millisecond
	// boundUnlock is every primitive's WithUnlockTimeout: the bound of
	// Unlock, Release, Extend, ForceUnlock and the inspections, which the
	// table calls with a context that has no deadline of its own.
	boundUnlock = 500 * time.Millisecond
	// boundNode is a Redlock's node timeout: the bound of its every call,
	// since each is decided on the members that answer within it.
	boundNode = 250 * time.Millisecond
	// boundSlack is what a call may take beyond its bound: the issue's
	// "bound + 100 ms".
	boundSlack = 100 * time.Millisecond
	// boundLease is every hold's lease, watchdog or fixed. It outlasts the
	// test, so that a lock left held is still held when it is checked,
	// and no give-back is hidden by an expiry.
	boundLease = 2 * time.Minute
	// boundFaultCap ends a fault that the calls under it have not outlived
	// by then: long enough to measure a call that waits out go-redis's own
	// read timeouts and retries (about 15 s), short enough for the budget.
	boundFaultCap = 20 * time.Second
	// boundPause is how long CLIENT PAUSE lasts. Redis 7.0 postpones even
	// CLIENT UNPAUSE during a pause, so this fault cannot end when the
	// calls have returned, as the others do; it outlasts every bound.
	boundPause = time.Second
	// boundStraggle is how long the calls still running when a fault ends
	// may take to return before they count as hung.
	boundStraggle = 30 * time.Second
	// boundSettle is the wait between the end of a fault and the check
	// that nothing is left held: the unlock timeout, which bounds the
	// give-backs and releases the calls left in the background, and a
	// margin for a loaded machine.
	boundSettle = boundUnlock + time.Second
	// boundDeadline bounds the whole table.
	boundDeadline = 3 * time.Minute
)

// boundClient is one of the go-redis configurations the table runs with:
// the defaults, under which go-redis ignores context deadlines and
// retries each command on its own, and ContextTimeoutEnabled.
type boundClient struct {
	name       string
	ctxTimeout bool
}

var boundClients = []boundClient{{"default", false}, {"ctxtimeout", true}}

// TestBound checks that every call keeps its time bound: every public
// method that talks to Redis, of every primitive (lock.New, lock.NewFair, both sides of an RWMutex, a
// semaphore, a Redlock over three masters and a multi-lock over the same
// three), under each of four faults of one server (SIGSTOP, CLIENT PAUSE
// ALL, a toxiproxy blackhole, a BUSY script), with go-redis's default
// options and with ContextTimeoutEnabled. Each cell checks that the call
// returned within its bound + 100 ms, that an error it returned names the
// operation and the lock, and that once the fault is over nothing is left
// held. A Redlock's faulted server is one of its three masters, so its
// calls must succeed on the quorum; a multi-lock's must fail in time.
//
// Each fault runs on servers of its own, one after the other: side by
// side, one fault's setup (hundreds of acquisitions under the race
// detector) slowed the calls measured under another by hundreds of
// milliseconds on two cores. All the cells of a fault share one fault
// window, which lasts until every call under it has returned
// (boundFaultCap at most; boundPause for CLIENT PAUSE, which cannot be
// lifted early). So the window outlasts every call it measures, and on a
// library that keeps its bounds it is short (about the longest bound):
// the releases and give-backs that the calls left in the background must
// have finished boundSettle after it ends. On one that does not, a slow
// call keeps the fault on for every cell of its fault, and the background
// work of the others has to outlast it too. The cells are reported as one
// table at the end.
//
// Releases are called with the hold's own context, which has no deadline
// (bound: the unlock timeout), and again in the "/ctx" rows with a context
// made from it with a shorter deadline, which then bounds them. Resize (a
// semaphore's) is bounded as the inspections are, by the unlock timeout;
// a Redlock's Drain by its context, measured after a Lock that leaves the
// faulted member's attempt in the background.
//
// FencingToken, Name, Size, Quorum and the package-level Remaining and
// FencingToken read only the context or the value, never Redis, so they
// are not in the table.
func TestBound(t *testing.T) {
	checkLeaks(t)
	ctx, cancel := context.WithTimeout(context.Background(), boundDeadline)
	defer cancel()

	cells, lasted := runBoundFaults(t, ctx, "faults", boundFaults)
	table, bad := boundTable(cells, lasted)
	t.Log("\n" + table)
	if bad == 0 {
		return
	}
	// A loaded machine may hold one call past its bound now and then: the
	// faults with a broken cell run again, and only a cell broken both
	// times fails the test (a library that breaks a promise does so every
	// time; the first table stays in the log).
	var again []*boundFault
	for _, f := range boundFaults {
		if slices.ContainsFunc(cells, func(c *boundCell) bool { return c.fault == f.name && len(c.flags) > 0 }) {
			again = append(again, f)
		}
	}
	second, lasted2 := runBoundFaults(t, ctx, "again", again)
	t.Log("\nthe faults with a broken cell, again:\n" + must(boundTable(second, lasted2)))
	twice := 0
	for _, c := range cells {
		if len(c.flags) > 0 && slices.ContainsFunc(second, func(d *boundCell) bool { return d.sameCell(c) && len(d.flags) > 0 }) {
			twice++
			t.Errorf("broken twice: %s under %s/%s: %s", c.prim.label+"."+c.row.method, c.fault, c.client, c.flags)
		}
	}
	t.Logf("%d of %d cells broke a promise in the first run, %d of them again", bad, len(cells), twice)
}

// runBoundFaults runs each fault of faults, one after the other, and
// returns their cells and how long each fault lasted.
func runBoundFaults(t *testing.T, ctx context.Context, name string, faults []*boundFault) ([]*boundCell, map[string]time.Duration) {
	var mu sync.Mutex
	var cells []*boundCell
	lasted := map[string]time.Duration{}
	t.Run(name, func(t *testing.T) {
		for _, f := range faults {
			t.Run(f.name, func(t *testing.T) {
				cs, d := runBoundFault(t, ctx, f)
				mu.Lock()
				defer mu.Unlock()
				cells = append(cells, cs...)
				lasted[f.name] = d
			})
		}
	})
	return cells, lasted
}

// must returns the table of boundTable's answer.
func must(table string, _ int) string { return table }

// sameCell reports whether c and d are the same row, fault and client.
func (c *boundCell) sameCell(d *boundCell) bool {
	return c.prim.label == d.prim.label && c.row.method == d.row.method && c.fault == d.fault && c.client == d.client
}

// boundGroup is one fault's servers and what the cells need of them.
type boundGroup struct {
	fault   *boundFault
	servers []*redistest.Server
	proxies []*netProxy
	// addrs is what the cells' clients dial: the servers, or the proxies
	// in front of them when the fault is on the network.
	addrs []string
	// checkers are straight to the servers: another process, which looks
	// at what the cells left once the fault is over.
	checkers []redis.UniversalClient
	// admin is straight to the faulted server, servers[0].
	admin *redis.Client
}

func newBoundGroup(t *testing.T, f *boundFault) *boundGroup {
	t.Helper()
	g := &boundGroup{fault: f, servers: redistest.StartServers(t, 3, redistest.WithArgs(f.args...))}
	if len(g.servers) != 3 {
		t.Fatalf("started %d redis-servers, want 3", len(g.servers))
	}
	for _, s := range g.servers {
		addr := s.Addr
		if f.proxied {
			p := newProxy(t, s.Addr)
			g.proxies = append(g.proxies, p)
			addr = p.Addr
		}
		g.addrs = append(g.addrs, addr)
		g.checkers = append(g.checkers, newClient(t, s.Addr))
	}
	g.admin = newClient(t, g.servers[0].Addr)
	return g
}

// runBoundFault runs every cell under fault f and returns them, judged,
// with how long the fault lasted.
func runBoundFault(t *testing.T, ctx context.Context, f *boundFault) ([]*boundCell, time.Duration) {
	g := newBoundGroup(t, f)
	cells := g.newCells(t)
	setUpAt := time.Now()
	g.setUp(ctx, cells)
	t.Logf("%d cells set up in %v", len(cells), time.Since(setUpAt).Round(time.Millisecond))

	stop := f.start(t, g)
	began := time.Now()
	all := launch(cells)
	if f.fixed == 0 {
		select {
		case <-all:
		case <-time.After(boundFaultCap):
		case <-ctx.Done():
		}
	}
	stop()
	lasted := time.Since(began)

	select {
	case <-all:
	case <-time.After(boundStraggle):
	case <-ctx.Done():
	}
	for _, c := range cells {
		c.judge()
	}
	time.Sleep(boundSettle)
	g.checkAll(ctx, cells)
	bad := 0
	for _, c := range cells {
		t.Log(c.logLine())
		if len(c.flags) > 0 {
			bad++
		}
	}
	t.Logf("%s lasted %v", f.name, lasted.Round(time.Millisecond))
	if bad > 0 {
		// TestBound decides, once the fault has run again.
		t.Logf("%d of %d cells broke a promise under %s (the table at the end of TestBound)", bad, len(cells), f.name)
	}
	return cells, lasted
}

// launch starts every cell's call at once, now that the fault is on; the
// channel is closed when all have returned.
func launch(cells []*boundCell) <-chan struct{} {
	gate := make(chan struct{})
	var wg sync.WaitGroup
	for _, c := range cells {
		if c.setupErr != nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-gate
			c.run()
		}()
	}
	close(gate)
	all := make(chan struct{})
	go func() {
		wg.Wait()
		close(all)
	}()
	return all
}

// boundSetUps is how many cells of a fault set up at once. All at once,
// under the race detector on two cores, some waited on Redis (through
// toxiproxy, which runs in this process) past go-redis's 3 s read timeout.
const boundSetUps = 8

// setUp makes every cell's clients and primitive, and takes the holds the
// calls need, all before the fault begins.
func (g *boundGroup) setUp(ctx context.Context, cells []*boundCell) {
	var wg sync.WaitGroup
	slots := make(chan struct{}, boundSetUps)
	for _, c := range cells {
		wg.Add(1)
		go func() {
			defer wg.Done()
			slots <- struct{}{}
			defer func() { <-slots }()
			c.setupErr = c.setUp(ctx)
		}()
	}
	wg.Wait()
}

// checkAll lets go of the holds the cells kept on purpose, then checks
// that another owner can take every cell's lock.
func (g *boundGroup) checkAll(ctx context.Context, cells []*boundCell) {
	var wg sync.WaitGroup
	for _, c := range cells {
		if c.setupErr != nil || c.hung {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.check(ctx, g.checkers)
		}()
	}
	wg.Wait()
}

// newCells makes the cells of every row with each client setting; their
// clients dial g.addrs and are closed when the test ends.
func (g *boundGroup) newCells(t *testing.T) []*boundCell {
	var cells []*boundCell
	for _, ck := range boundClients {
		for _, p := range boundPrims {
			for _, r := range p.rows {
				cs := make([]redis.UniversalClient, p.masters)
				for i := range cs {
					c := redis.NewClient(&redis.Options{Addr: g.addrs[i], ContextTimeoutEnabled: ck.ctxTimeout})
					t.Cleanup(func() { _ = c.Close() })
					cs[i] = c
				}
				cells = append(cells, &boundCell{
					fault:   g.fault.name,
					client:  ck.name,
					prim:    p,
					row:     r,
					name:    fmt.Sprintf("bound:%s:%s.%s", ck.name, p.label, r.method),
					clients: cs,
					call:    &boundCall{},
				})
			}
		}
	}
	return cells
}
