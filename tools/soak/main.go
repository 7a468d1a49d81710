// Command soak runs every relock primitive under mixed contention for a
// while and then checks what it recorded: many goroutines, on two clients
// (two "processes"), take reentrant locks (re-entering half the time),
// read and write locks, and semaphore permits on a few dozen names,
// recording every hold with internal/testkit/history. At the end it prints the
// acquisitions per second, the p50/p99/max wait, the violations found
// (overlaps, permits over capacity, fencing tokens out of order: must be
// 0), the goroutines left once every primitive is done and the clients are
// closed (must be back to the count before they were made), and the keys
// left in Redis: fencing counters and latches, each with its TTL, and
// nothing else; none without a TTL or with one above 24 h. It exits
// non-zero on any violation, failed call, goroutine leak or such key.
//
//	cd tools && go run ./soak [-duration 60s] [-goroutines 200] [-locks 50] [-addr host:port]
//
// Without -addr it starts its own redis-server on loopback
// (internal/testkit/redistest.Launch). With -addr it touches only keys that hold
// this run's id, and flushes nothing. The run is bounded by -duration plus
// a fixed drain timeout for the last holds, the watchdog and the unlock
// latches (which expire on their own, twice the unlock timeout).
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/internal/core"
	"github.com/relock-go/relock/internal/scripts"
	"github.com/relock-go/relock/internal/testkit/history"
	"github.com/relock-go/relock/internal/testkit/redistest"
	"github.com/relock-go/relock/lock"
	"github.com/relock-go/relock/rwlock"
	"github.com/relock-go/relock/semaphore"
)

const (
	// drainTimeout bounds everything after -duration: the last holds, the
	// latches' expiry, the goroutines winding down.
	drainTimeout = 30 * time.Second
	// unlockTimeout is short so that the unlock latches (twice it) expire
	// within the drain.
	unlockTimeout = 2 * time.Second
	// waitTimeout bounds each acquire: a wait this long is a failure here.
	waitTimeout = 20 * time.Second
	semSize     = 3
)

func main() {
	duration := flag.Duration("duration", 60*time.Second, "how long to run the load")
	goroutines := flag.Int("goroutines", 200, "goroutines taking holds, split over two clients")
	locks := flag.Int("locks", 50, "names, spread over lock, rwlock and semaphore")
	addr := flag.String("addr", "", "redis address; empty: start a redis-server on loopback")
	flag.Parse()
	if *goroutines < 1 || *locks < 1 || *duration <= 0 {
		fmt.Fprintln(os.Stderr, "soak: -goroutines and -locks must be at least 1, -duration positive")
		os.Exit(2)
	}
	os.Exit(run(*duration, *goroutines, *locks, *addr))
}

// stats is what one worker saw.
type stats struct {
	waits                []time.Duration
	locks, reentries     int64
	reads, writes, perms int64
	failures             []string
}

func run(duration time.Duration, goroutines, locks int, addr string) int {
	if addr == "" {
		dir, err := os.MkdirTemp("", "relock-soak-")
		if err != nil {
			fmt.Fprintln(os.Stderr, "soak:", err)
			return 2
		}
		defer os.RemoveAll(dir)
		srv, err := redistest.Launch(dir)
		if err != nil {
			fmt.Fprintln(os.Stderr, "soak:", err)
			return 2
		}
		defer srv.Stop()
		addr = srv.Addr
		fmt.Printf("redis-server started on %s\n", addr)
	}
	admin := redis.NewClient(&redis.Options{Addr: addr})
	defer admin.Close()
	bg := context.Background()
	if err := admin.Ping(bg).Err(); err != nil {
		fmt.Fprintln(os.Stderr, "soak: ping", addr, ":", err)
		return 2
	}
	runID := uuid.NewString()[:8]
	// The baseline is taken with the server up and the admin client
	// connected, before any primitive or worker client exists.
	baseline := runtime.NumGoroutine()

	clients := []redis.UniversalClient{
		redis.NewClient(&redis.Options{Addr: addr, PoolSize: 64}),
		redis.NewClient(&redis.Options{Addr: addr, PoolSize: 64}),
	}
	names := make([]string, locks)
	for i := range names {
		names[i] = fmt.Sprintf("soak:%s:%s:%d", runID, [...]string{"lock", "rw", "sem"}[i%3], i)
	}
	fmt.Printf("run %s: %d goroutines on 2 clients, %d names (lock, rwlock, semaphore of %d), %v\n",
		runID, goroutines, locks, semSize, duration)

	h := history.New()
	// The acquiring context scopes a hold, so it outlives the load: it is
	// cancelled only after every worker is done.
	holdCtx, cancelHolds := context.WithCancel(bg)
	defer cancelHolds()
	var stop atomic.Bool
	all := make([]*stats, goroutines)
	var wg sync.WaitGroup
	start := time.Now()
	for g := range goroutines {
		st := &stats{}
		all[g] = st
		c := clients[g%2]
		rng := rand.New(rand.NewPCG(uint64(g), uint64(start.UnixNano())))
		wg.Go(func() {
			for !stop.Load() {
				i := rng.IntN(len(names))
				if err := step(holdCtx, c, names[i], i%3, rng, h, st); err != nil {
					st.failures = append(st.failures, err.Error())
					if len(st.failures) > 10 {
						return
					}
				}
			}
		})
	}
	time.Sleep(duration)
	stop.Store(true)
	elapsed := time.Since(start)
	drainDeadline := time.Now().Add(drainTimeout)
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Until(drainDeadline)):
		fmt.Printf("FAIL: workers still running %v after the load stopped\n", drainTimeout)
		return 1
	}
	loadEnd := time.Since(start)
	cancelHolds()

	failed := false
	var waits []time.Duration
	var tot stats
	var failures []string
	for _, st := range all {
		waits = append(waits, st.waits...)
		tot.locks += st.locks
		tot.reentries += st.reentries
		tot.reads += st.reads
		tot.writes += st.writes
		tot.perms += st.perms
		failures = append(failures, st.failures...)
	}
	slices.Sort(waits)
	acq := tot.locks + tot.reads + tot.writes + tot.perms
	fmt.Printf("load: %v, drained after %v\n", elapsed.Round(time.Millisecond), loadEnd.Round(time.Millisecond))
	fmt.Printf("acquisitions: %d (%.0f/s): lock %d (+%d re-entries), read %d, write %d, semaphore %d\n",
		acq, float64(acq)/elapsed.Seconds(), tot.locks, tot.reentries, tot.reads, tot.writes, tot.perms)
	if len(waits) > 0 {
		fmt.Printf("wait: p50 %v, p99 %v, max %v\n", pct(waits, 50), pct(waits, 99), waits[len(waits)-1])
	}
	if len(failures) > 0 {
		failed = true
		fmt.Printf("FAIL: %d failed calls, first: %s\n", len(failures), failures[0])
	} else {
		fmt.Println("failed calls: 0")
	}

	checkStart := time.Now()
	vs := h.Check()
	fmt.Printf("violations (overlaps, over capacity, token order): %d, in %d recorded holds (checked in %v)\n",
		len(vs), h.Len(), time.Since(checkStart).Round(time.Millisecond))
	for i, v := range vs {
		if i == 5 {
			fmt.Printf("  ... %d more\n", len(vs)-5)
			break
		}
		fmt.Println("  " + strings.ReplaceAll(v.String(), "\n", "\n  "))
	}
	failed = failed || len(vs) > 0

	ks := leftovers(admin, runID)
	fmt.Printf("keys left: %d with a TTL (%d fencing counters, %d latches; longest TTL %v), %d without\n",
		ks.withTTL, ks.counters, ks.latches, ks.maxTTL.Round(time.Second), len(ks.noTTL))
	for _, bad := range []struct {
		what string
		keys []string
	}{{"without a TTL", ks.noTTL}, {"with a TTL above 24 h", ks.longTTL}, {"that no hold should leave", ks.other}} {
		if len(bad.keys) == 0 {
			continue
		}
		failed = true
		fmt.Printf("FAIL: %d key(s) %s:\n", len(bad.keys), bad.what)
		for i, k := range bad.keys {
			if i == 10 {
				fmt.Printf("  ... %d more\n", len(bad.keys)-10)
				break
			}
			fmt.Printf("  %q\n", k)
		}
	}

	for _, c := range clients {
		_ = c.Close()
	}
	n := runtime.NumGoroutine()
	for n > baseline && time.Now().Before(drainDeadline) {
		time.Sleep(50 * time.Millisecond)
		n = runtime.NumGoroutine()
	}
	fmt.Printf("goroutines: %d before the clients and primitives, %d after every primitive is done and the clients closed\n", baseline, n)
	if n > baseline {
		failed = true
		buf := make([]byte, 1<<20)
		fmt.Printf("FAIL: %d goroutine(s) leaked:\n%s\n", n-baseline, buf[:runtime.Stack(buf, true)])
	}
	if failed {
		fmt.Println("FAIL")
		return 1
	}
	fmt.Println("PASS")
	return 0
}

func pct(sorted []time.Duration, p int) time.Duration {
	return sorted[(len(sorted)-1)*p/100].Round(time.Microsecond)
}

// step takes one hold of names[i] (primitive kind), works in it briefly
// and records it.
func step(ctx context.Context, c redis.UniversalClient, name string, kind int, rng *rand.Rand, h *history.History, st *stats) error {
	work := func() { time.Sleep(time.Duration(rng.IntN(500)) * time.Microsecond) }
	t0 := time.Now()
	switch kind {
	case 0:
		mu := lock.New(c, name, lock.WithWaitTimeout(waitTimeout), lock.WithUnlockTimeout(unlockTimeout))
		held, err := mu.Lock(ctx)
		if err != nil {
			return err
		}
		at := time.Now()
		st.waits = append(st.waits, at.Sub(t0))
		if rng.IntN(2) == 0 {
			inner, err := mu.Lock(held)
			if err != nil {
				_ = mu.Unlock(held)
				return fmt.Errorf("re-enter: %w", err)
			}
			innerAt := time.Now()
			work()
			if err := record(h, name, history.Exclusive, 0, inner, innerAt, mu.Unlock); err != nil {
				_ = mu.Unlock(held)
				return err
			}
			st.reentries++
		}
		work()
		st.locks++
		return record(h, name, history.Exclusive, 0, held, at, mu.Unlock)
	case 1:
		rw := rwlock.New(c, name, rwlock.WithWaitTimeout(waitTimeout), rwlock.WithUnlockTimeout(unlockTimeout))
		if rng.IntN(4) == 0 {
			held, err := rw.Lock(ctx)
			if err != nil {
				return err
			}
			at := time.Now()
			st.waits = append(st.waits, at.Sub(t0))
			work()
			st.writes++
			return record(h, name, history.Exclusive, 0, held, at, rw.Unlock)
		}
		held, err := rw.RLock(ctx)
		if err != nil {
			return err
		}
		at := time.Now()
		st.waits = append(st.waits, at.Sub(t0))
		work()
		st.reads++
		return record(h, name, history.Shared, 0, held, at, rw.RUnlock)
	default:
		s := semaphore.New(c, name, semSize, semaphore.WithWaitTimeout(waitTimeout), semaphore.WithUnlockTimeout(unlockTimeout))
		n := 1 + rng.Int64N(semSize)
		held, err := s.Acquire(ctx, n)
		if err != nil {
			return err
		}
		at := time.Now()
		st.waits = append(st.waits, at.Sub(t0))
		work()
		st.perms++
		return record(h, name, history.Permits, n, held, at, s.Release)
	}
}

// record releases held and, if the release succeeded (the hold lasted on
// the server until it was asked to end), records [acquired, now).
func record(h *history.History, name string, kind history.Kind, n int64, held context.Context, acquired time.Time, release func(context.Context) error) error {
	released := time.Now()
	if err := release(held); err != nil {
		return fmt.Errorf("release %s %q: %w", kind, name, err)
	}
	id, _ := core.Owner(held)
	hd := history.Hold{Lock: name, Owner: id, Kind: kind, Acquired: acquired, Released: released}
	if kind == history.Permits {
		hd.N, hd.Size = n, semSize
	} else {
		hd.Token, hd.HasToken = lock.FencingToken(held)
	}
	h.Add(hd)
	return nil
}

// keysLeft is what a run leaves in Redis once every hold has ended.
type keysLeft struct {
	withTTL, counters, latches int
	maxTTL                     time.Duration
	noTTL, longTTL             []string
	other                      []string // neither a fencing counter nor a latch
}

// leftovers walks this run's keys. Once every hold has ended, only fencing
// counters (an hour) and unlock or acquire latches (twice the unlock
// timeout) may be left, each with its TTL; nothing may lack one.
func leftovers(admin *redis.Client, runID string) keysLeft {
	ctx := context.Background()
	var ks keysLeft
	iter := admin.Scan(ctx, 0, "*"+runID+"*", 1000).Iterator()
	for iter.Next(ctx) {
		k := iter.Val()
		ttl, err := admin.PTTL(ctx, k).Result()
		switch {
		case err != nil:
			ks.other = append(ks.other, k+": PTTL error: "+err.Error())
			continue
		case ttl == -2 || ttl == -2*time.Millisecond: // expired since the SCAN
			continue
		case ttl < 0:
			ks.noTTL = append(ks.noTTL, k)
			continue
		case ttl > 24*time.Hour:
			ks.longTTL = append(ks.longTTL, k)
		}
		ks.withTTL++
		ks.maxTTL = max(ks.maxTTL, ttl)
		switch {
		case strings.HasPrefix(k, scripts.TokenPrefix):
			ks.counters++
		case strings.HasPrefix(k, scripts.UnlockLatchPrefix), strings.HasPrefix(k, scripts.AcquireLatchPrefix):
			ks.latches++
		default:
			ks.other = append(ks.other, k)
		}
	}
	if err := iter.Err(); err != nil {
		ks.other = append(ks.other, "SCAN error: "+err.Error())
	}
	return ks
}
