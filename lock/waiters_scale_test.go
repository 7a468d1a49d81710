package lock_test

import (
	"bytes"
	"context"
	"runtime"
	"runtime/pprof"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/internal/testkit/redistest"
	"github.com/relock-go/relock/lock"
)

// Scale of waiting: 10,000 goroutines of one process wait for
// 1,000 locks over one client, so over one pub/sub connection. Run it with
// `make bench-scale` (or go test -run '^$' -bench Scale -benchtime 1x
// ./lock/). It needs a real redis-server.

const (
	wsLocks   = 1000
	wsPerLock = 10
	wsWaiters = wsLocks * wsPerLock
	// wsHold is how long each waiter holds its lock once it has it.
	wsHold = 100 * time.Microsecond
	// wsBound stops everything, should a wake-up be lost.
	wsBound = 60 * time.Second
)

// BenchmarkWaiterScale10k: 1,000 locks, each held by one holder; 10,000
// goroutines (10 per lock) wait in Lock on one client. Once every waiter is
// parked in the wait loop, all holders unlock at once; each waiter, when it
// gets its lock, holds it for wsHold and unlocks, so the 10 waiters of a
// lock pass it down the line.
//
// The hand-off latency of one acquisition is measured from the release
// that freed the lock to the return of the Lock that took it: the release
// time is read just before the previous holder calls Unlock (after it left
// its critical section), the acquire time just after Lock returns. It so
// covers the unlock script, the wake-up (local release or pub/sub
// message), the waiter's retry script and every scheduling delay between.
// It reports:
//
//	handoff-p50-ms, handoff-p99-ms, handoff-max-ms  over all 10,000
//	first-handoff-p99-ms   over the 1,000 first hand-offs (holders to the
//	                       first waiters, all released in one burst)
//	handoffs-over-100ms    how many took longer (a lost wake-up would show
//	                       as one waiting for the 30 s lease's fallback)
//	total-ms               from the holders' release to the last Lock return
//	pubsub-conns           pub/sub connections on the server while the
//	                       10,000 wait (must be 1)
//	subscribed-channels    channels of that connection (1,000 expected)
//	park-s                 time until every waiter was parked
//
// "Parked" is read from a goroutine profile: 10,000 goroutines whose
// innermost non-runtime frame is in internal/core/acquire.go (the wait loop's
// select), with the hub subscribed to all 1,000 channels.
//
// Any two holders of one lock inside their critical sections at once fail
// the benchmark. b.N only wraps the scenario; use -benchtime 1x.
func BenchmarkWaiterScale10k(b *testing.B) {
	srv := redistest.StartServer(b)
	rdb := srv.Client(b, func(o *redis.Options) { o.PoolSize = 256 })
	admin := srv.Client(b)
	for range b.N {
		waiterScale(b, rdb, admin)
	}
}

func waiterScale(b *testing.B, rdb, admin *redis.Client) {
	ctx, cancel := context.WithTimeout(context.Background(), wsBound)
	var wg sync.WaitGroup
	defer func() {
		cancel() // ends every waiter still waiting, should the run fail
		wg.Wait()
	}()
	if err := rdb.FlushAll(ctx).Err(); err != nil {
		b.Fatal(err)
	}
	g0 := runtime.NumGoroutine()
	base := time.Now() // times below are monotonic offsets from base
	since := func() int64 { return int64(time.Since(base)) }

	mus := make([]*lock.Mutex, wsLocks)
	holds := make([]context.Context, wsLocks)
	inside := make([]atomic.Int32, wsLocks)
	released := make([]atomic.Int64, wsLocks) // when the last release of lock i began
	for i := range mus {
		mus[i] = lock.New(rdb, "ws-"+strconv.Itoa(i))
		held, err := mus[i].Lock(ctx)
		if err != nil {
			b.Fatal(err)
		}
		holds[i] = held
		inside[i].Store(1)
	}

	var overlaps, failures atomic.Int32
	handoff := make([]time.Duration, wsWaiters) // by waiter
	order := make([]atomic.Int32, wsLocks)      // acquisitions of lock i so far
	first := make([]bool, wsWaiters)            // got its lock from the holder
	var lastReturn atomic.Int64
	for i := range wsLocks {
		for j := range wsPerLock {
			k := i*wsPerLock + j
			wg.Go(func() {
				held, err := mus[i].Lock(ctx)
				now := since()
				if err != nil {
					if failures.Add(1) <= 5 {
						b.Errorf("waiter %d of lock %d: %v", j, i, err)
					}
					return
				}
				if inside[i].Add(1) != 1 {
					overlaps.Add(1)
				}
				handoff[k] = time.Duration(now - released[i].Load())
				first[k] = order[i].Add(1) == 1
				for old := lastReturn.Load(); now > old && !lastReturn.CompareAndSwap(old, now); old = lastReturn.Load() {
				}
				time.Sleep(wsHold)
				inside[i].Add(-1)
				released[i].Store(since())
				if err := mus[i].Unlock(held); err != nil {
					failures.Add(1)
					b.Errorf("unlock by waiter %d of lock %d: %v", j, i, err)
				}
			})
		}
	}

	// Wait until every waiter is parked in the wait loop and the hub is
	// subscribed to every lock's channel.
	parkStart := time.Now()
	var subs int
	for {
		parked := parkedWaiters()
		infos, err := redistest.ClientList(ctx, admin)
		if err != nil {
			b.Fatal(err)
		}
		subs = 0
		for _, ci := range infos {
			if ci.IsPubSub() {
				subs += ci.Sub + ci.SSub
			}
		}
		if parked == wsWaiters && subs == wsLocks {
			break
		}
		if time.Since(parkStart) > 20*time.Second || failures.Load() > 0 {
			var prof bytes.Buffer
			_ = pprof.Lookup("goroutine").WriteTo(&prof, 1)
			b.Fatalf("after %v: %d of %d waiters parked, %d channels subscribed, %d failures; goroutines:\n%.6000s",
				time.Since(parkStart).Round(time.Millisecond), parked, wsWaiters, subs, failures.Load(), prof.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	parkTime := time.Since(parkStart)
	conns, err := redistest.CountPubSubConns(ctx, admin)
	if err != nil {
		b.Fatal(err)
	}

	// Release every holder at once.
	var start sync.WaitGroup
	gate := make(chan struct{})
	for i := range wsLocks {
		start.Go(func() {
			<-gate
			inside[i].Add(-1)
			released[i].Store(since())
			if err := mus[i].Unlock(holds[i]); err != nil {
				failures.Add(1)
				b.Errorf("unlock by the holder of lock %d: %v", i, err)
			}
		})
	}
	t0 := since()
	close(gate)
	start.Wait()
	wg.Wait()
	total := time.Duration(lastReturn.Load() - t0)

	if n := overlaps.Load(); n != 0 {
		b.Fatalf("%d acquisitions overlapped another holder of the same lock", n)
	}
	if n := failures.Load(); n != 0 {
		b.Fatalf("%d waiters or unlocks failed", n)
	}

	all := slices.Clone(handoff)
	slices.Sort(all)
	q := func(s []time.Duration, p float64) float64 {
		if len(s) == 0 {
			return 0
		}
		return float64(s[min(int(p*float64(len(s))), len(s)-1)]) / float64(time.Millisecond)
	}
	var firsts []time.Duration
	for k, d := range handoff {
		if first[k] {
			firsts = append(firsts, d)
		}
	}
	slices.Sort(firsts)
	if len(firsts) != wsLocks {
		b.Fatalf("%d first acquisitions, want one per lock (%d)", len(firsts), wsLocks)
	}

	b.ReportMetric(q(all, 0.50), "handoff-p50-ms")
	b.ReportMetric(q(all, 0.99), "handoff-p99-ms")
	b.ReportMetric(q(all, 1), "handoff-max-ms")
	b.ReportMetric(q(firsts, 0.99), "first-handoff-p99-ms")
	b.ReportMetric(float64(len(all)-sort.Search(len(all), func(i int) bool { return all[i] > 100*time.Millisecond })), "handoffs-over-100ms")
	b.ReportMetric(float64(total)/float64(time.Millisecond), "total-ms")
	b.ReportMetric(float64(conns), "pubsub-conns")
	b.ReportMetric(float64(subs), "subscribed-channels")
	b.ReportMetric(parkTime.Seconds(), "park-s")
	if conns != 1 {
		b.Errorf("%d pub/sub connections while 10,000 goroutines wait on one client, want 1", conns)
	}
	// The hub closes its idle pub/sub connection (and its goroutine) after
	// a linger; let it, so that goleak finds nothing.
	for deadline := time.Now().Add(5 * time.Second); runtime.NumGoroutine() > g0 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
}

// parkedWaiters counts the goroutines parked in the acquire wait loop
// itself: the innermost frame outside the runtime is in file
// internal/core/acquire.go (not in a subscription or a Redis call it makes).
func parkedWaiters() int {
	var buf bytes.Buffer
	_ = pprof.Lookup("goroutine").WriteTo(&buf, 1)
	n := 0
	for rec := range strings.SplitSeq(buf.String(), "\n\n") {
		// A record is "<count> @ <pcs>" then one "#\t<pc>\t<func>+<off>\t<file>"
		// line per frame (runtime frames left out); the first record also
		// has the profile's title line before it.
		count := 0
		for line := range strings.SplitSeq(rec, "\n") {
			if cnt, _, ok := strings.Cut(line, " @ "); ok && count == 0 {
				count, _ = strconv.Atoi(strings.TrimSpace(cnt))
				continue
			}
			f := strings.Fields(line)
			if count == 0 || len(f) < 3 || f[0] != "#" || strings.HasPrefix(f[2], "runtime.") {
				continue
			}
			if len(f) > 3 && strings.Contains(f[3], "/internal/core/acquire.go:") {
				n += count
			}
			break
		}
	}
	return n
}
