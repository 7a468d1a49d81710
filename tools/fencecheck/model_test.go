package fencecheck

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/relock-go/relock/fence"
	"github.com/relock-go/relock/internal/testkit/redistest"
)

// interleavings is how many random interleavings each guard must pass.
const interleavings = 1000

// write is one fenced write of a history: who, with which token, when
// (monotonic, around the call) and what came of it.
type write struct {
	writer     int
	token      int64
	value      string
	start, end time.Time
	err        error
}

func (w write) accepted() bool { return w.err == nil }
func (w write) stale() bool    { return errors.Is(w.err, fence.ErrStale) }

// trial runs 2 to 4 writers on one resource at once: writer j holds the
// token tokens[j] (increasing with j, as successive holds of a lock) and
// writes 1 to 3 times with it, each writer starting after its own random
// delay, so that a lower token often arrives after a higher one.
func trial(ctx context.Context, s store, resource string, rng *rand.Rand) []write {
	n := 2 + rng.IntN(3)
	type plan struct {
		token  int64
		writes int
		delay  []time.Duration
	}
	plans := make([]plan, n)
	token := int64(1 + rng.IntN(5))
	for j := range plans {
		token += int64(1 + rng.IntN(3))
		p := plan{token: token, writes: 1 + rng.IntN(3)}
		for range p.writes {
			p.delay = append(p.delay, time.Duration(rng.IntN(400))*time.Microsecond)
		}
		plans[j] = p
	}
	var mu sync.Mutex
	var history []write
	var wg sync.WaitGroup
	for j, p := range plans {
		wg.Go(func() {
			for k := range p.writes {
				time.Sleep(p.delay[k])
				w := write{writer: j, token: p.token, value: fmt.Sprintf("w%d.%d", j, k), start: time.Now()}
				w.err = s.write(ctx, resource, w.token, w.value)
				w.end = time.Now()
				mu.Lock()
				history = append(history, w)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return history
}

// checkHistory holds a trial's history and the store's log of accepted
// writes to the model of a fenced register: every write either accepted
// or refused as stale; the log holds exactly the accepted writes, in
// non-decreasing token order; no write accepted after (in real time) one
// with a larger token was; and no write refused unless a larger token's
// write was accepted before the refusal returned, so a holder's repeated
// writes with its own token pass. It returns how many accepted writes had
// a token below an accepted one (the stale writes the guard let through)
// and the first violation.
func checkHistory(history []write, log []string) (staleAccepted int, err error) {
	fail := func(format string, args ...any) {
		if err == nil {
			err = fmt.Errorf(format, args...)
		}
	}
	accepted := map[string]write{}
	for _, w := range history {
		switch {
		case w.accepted():
			accepted[w.value] = w
		case !w.stale():
			fail("write %s (token %d) failed: %v", w.value, w.token, w.err)
		}
	}
	if len(log) != len(accepted) {
		fail("log holds %d writes, %d were accepted: %q", len(log), len(accepted), log)
	}
	var last int64
	for _, e := range log {
		tok, value, _ := strings.Cut(e, " ")
		t, _ := strconv.ParseInt(tok, 10, 64)
		if _, ok := accepted[value]; !ok {
			fail("log holds %q, not accepted", e)
		}
		if t < last {
			staleAccepted++
			fail("log: token %d written after %d: %q", t, last, log)
		}
		last = max(last, t)
	}
	for _, w := range history {
		justified := false
		for _, b := range accepted {
			switch {
			case w.accepted() && b.token > w.token && b.end.Before(w.start):
				staleAccepted++
				fail("%s (token %d) accepted after %s (token %d) had returned", w.value, w.token, b.value, b.token)
			case w.stale() && b.token > w.token && b.start.Before(w.end):
				justified = true
			}
		}
		if w.stale() && !justified {
			fail("%s (token %d) refused, but no larger token was accepted before: %v", w.value, w.token, w.err)
		}
	}
	return staleAccepted, err
}

// tally is what a run of interleavings came to.
type tally struct {
	writes, refused, staleAccepted int
	violations                     []string
}

// runInterleavings runs the trials, 8 at a time on resources of their
// own, and checks each history against the model.
func runInterleavings(s store, trials int) tally {
	ctx := context.Background()
	prefix := fmt.Sprintf("model:%d:", time.Now().UnixNano())
	var mu sync.Mutex
	var tl tally
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for i := range trials {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			res := prefix + strconv.Itoa(i)
			history := trial(ctx, s, res, rand.New(rand.NewPCG(uint64(i), 49)))
			log, err := s.log(ctx, res)
			bad := 0
			if err == nil {
				bad, err = checkHistory(history, log)
			}
			mu.Lock()
			defer mu.Unlock()
			tl.writes += len(history)
			tl.staleAccepted += bad
			for _, w := range history {
				if w.stale() {
					tl.refused++
				}
			}
			if err != nil {
				tl.violations = append(tl.violations, fmt.Sprintf("trial %d (seed %d): %v", i, i, err))
			}
		})
	}
	wg.Wait()
	return tl
}

// checkInterleavings fails the test on any history the model refuses.
func checkInterleavings(t *testing.T, s store) {
	tl := runInterleavings(s, interleavings)
	t.Logf("%d interleavings: %d writes, %d refused as stale, %d stale writes accepted", interleavings, tl.writes, tl.refused, tl.staleAccepted)
	for i, v := range tl.violations {
		if i == 10 {
			t.Errorf("... and %d more", len(tl.violations)-10)
			break
		}
		t.Error(v)
	}
	if tl.refused == 0 {
		t.Error("no write was ever refused: the trials do not exercise the guard")
	}
}

func TestInterleavingsSQLite(t *testing.T) {
	s, _ := newSQLite(t)
	checkInterleavings(t, s)
}

func TestInterleavingsPostgres(t *testing.T) {
	s, _ := newPostgres(t)
	checkInterleavings(t, s)
}

func TestInterleavingsRedis(t *testing.T) {
	srv := redistest.StartServer(t)
	checkInterleavings(t, newRedisStore(srv.Client(t)))
}

func TestInterleavingsHTTP(t *testing.T) {
	srv := redistest.StartServer(t)
	checkInterleavings(t, newHTTPStore(t, fence.NewRedis(srv.Client(t))))
}

// The checker itself: it must catch a register that takes every write.
func TestCheckHistoryCatchesAnUnguardedStore(t *testing.T) {
	t0 := time.Now()
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	history := []write{
		{writer: 1, token: 9, value: "b", start: at(0), end: at(1)},
		{writer: 0, token: 5, value: "a", start: at(2), end: at(3)},
	}
	if bad, err := checkHistory(history, []string{"9 b", "5 a"}); bad == 0 || err == nil {
		t.Errorf("stale write not caught: %d, %v", bad, err)
	}
	history[1].err = fence.ErrStale
	if bad, err := checkHistory(history, []string{"9 b"}); bad != 0 || err != nil {
		t.Errorf("a refused stale write flagged: %d, %v", bad, err)
	}
	history[0].err = fence.ErrStale // refused with no reason
	if _, err := checkHistory(history, nil); err == nil {
		t.Error("an unjustified refusal not caught")
	}
}

// The whole run must catch a store that checks nothing.
func TestInterleavingsCatchAnUnguardedStore(t *testing.T) {
	tl := runInterleavings(&unguarded{logs: map[string][]string{}}, 200)
	t.Logf("unguarded: %d writes, %d stale writes accepted, %d histories refused", tl.writes, tl.staleAccepted, len(tl.violations))
	if tl.staleAccepted == 0 || len(tl.violations) == 0 {
		t.Error("the model passed a store without a guard")
	}
}

type unguarded struct {
	mu   sync.Mutex
	logs map[string][]string
}

func (u *unguarded) write(_ context.Context, res string, token int64, value string) error {
	time.Sleep(50 * time.Microsecond)
	u.mu.Lock()
	defer u.mu.Unlock()
	u.logs[res] = append(u.logs[res], fmt.Sprintf("%d %s", token, value))
	return nil
}

func (u *unguarded) value(context.Context, string) (string, error) { return "", nil }

func (u *unguarded) log(_ context.Context, res string) ([]string, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.logs[res], nil
}
