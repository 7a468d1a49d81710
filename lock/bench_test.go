package lock_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/internal/testkit/redistest"
	"github.com/relock-go/relock/lock"
)

// Benchmarks run against a real redis-server on loopback: miniredis would
// measure miniredis. BenchmarkRawFloor is the floor the others are read
// against: the two round trips a lock+unlock pair cannot avoid (SET NX PX,
// then a compare-and-delete script), with no reentrancy, token or watchdog.

func benchClient(b testing.TB) *redis.Client {
	srv := redistest.StartServer(b)
	return srv.Client(b, func(o *redis.Options) { o.PoolSize = 64 })
}

var cadScript = redis.NewScript(`if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0`)

func BenchmarkRawFloor(b *testing.B) {
	rdb := benchClient(b)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if ok, err := rdb.SetNX(ctx, "raw", "me", 30*time.Second).Result(); err != nil || !ok {
			b.Fatal(ok, err)
		}
		if err := cadScript.Run(ctx, rdb, []string{"raw"}, "me").Err(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkUncontendedLockUnlock(b *testing.B) {
	benchLockUnlock(context.Background(), b)
}

// BenchmarkUncontendedLockUnlockUnderDeadline is the pair under a context
// with a deadline, as a request's is.
func BenchmarkUncontendedLockUnlockUnderDeadline(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	benchLockUnlock(ctx, b)
}

func benchLockUnlock(ctx context.Context, b *testing.B) {
	rdb := benchClient(b)
	mu := lock.New(rdb, "bench")
	b.ReportAllocs()
	for b.Loop() {
		held, err := mu.Lock(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if err := mu.Unlock(held); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkScriptsOnly sends relock's acquire and release scripts by
// plain go-redis calls, without relock's Go code: read beside
// BenchmarkRawFloor and BenchmarkUncontendedLockUnlock, it splits relock's
// extra time per pair between its scripts and its client code.
func BenchmarkScriptsOnly(b *testing.B) {
	rdb := benchClient(b)
	ctx := context.Background()
	src := lock.ScriptSources()
	acquire, release := redis.NewScript(src["acquire"]), redis.NewScript(src["unlock_last"])
	keys := []string{"bench", "redisson_lock_token:{bench}", "bench"}
	relKeys := []string{"bench", "redisson_lock__channel:{bench}"}
	b.ReportAllocs()
	for b.Loop() {
		if err := acquire.Run(ctx, rdb, keys, 30000, "bench:1", "minted", 15000).Err(); err != nil {
			b.Fatal(err)
		}
		if n, err := release.Run(ctx, rdb, relKeys, "0", "bench:1", "publish").Int64(); err != nil || n != 1 {
			b.Fatal(n, err)
		}
	}
}

func BenchmarkReentrantLockUnlock(b *testing.B) {
	rdb := benchClient(b)
	ctx := context.Background()
	mu := lock.New(rdb, "bench")
	outer, err := mu.Lock(ctx)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		inner, err := mu.Lock(outer)
		if err != nil {
			b.Fatal(err)
		}
		if err := mu.Unlock(inner); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if err := mu.Unlock(outer); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkContendedHandoff16: 16 goroutines share one lock; each op is one
// critical section (lock, ~0 work, unlock). It reports the spread between
// the goroutine that got the fewest sections and the one that got the most.
func BenchmarkContendedHandoff16(b *testing.B) {
	rdb := benchClient(b)
	ctx := context.Background()
	mu := lock.New(rdb, "bench")
	const g = 16
	var next atomic.Int64
	var inside, overlaps atomic.Int32
	counts := make([]int64, g)
	b.ReportAllocs()
	b.ResetTimer()
	var wg sync.WaitGroup
	for i := range g {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(b.N) {
				held, err := mu.Lock(ctx)
				if err != nil {
					b.Error(err)
					return
				}
				if inside.Add(1) != 1 {
					overlaps.Add(1)
				}
				counts[i]++
				inside.Add(-1)
				if err := mu.Unlock(held); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	if overlaps.Load() != 0 {
		b.Fatalf("%d overlapping critical sections", overlaps.Load())
	}
	lo, hi := counts[0], counts[0]
	for _, c := range counts {
		lo, hi = min(lo, c), max(hi, c)
	}
	b.ReportMetric(float64(lo), "min-sections/goroutine")
	b.ReportMetric(float64(hi), "max-sections/goroutine")
	_ = fmt.Sprint()
}

// BenchmarkParallel64DistinctKeys: 64 goroutines, each locking and
// unlocking its own key, against BenchmarkParallel64RawFloor in the same
// run: what batching concurrent scripts into pipelines buys.
func BenchmarkParallel64DistinctKeys(b *testing.B) {
	rdb := benchClient(b)
	parallel64(b, func(key string) func(ctx context.Context) error {
		mu := lock.New(rdb, key)
		return func(ctx context.Context) error {
			held, err := mu.Lock(ctx)
			if err != nil {
				return err
			}
			return mu.Unlock(held)
		}
	})
}

func BenchmarkParallel64RawFloor(b *testing.B) {
	rdb := benchClient(b)
	parallel64(b, func(key string) func(ctx context.Context) error {
		return func(ctx context.Context) error {
			if ok, err := rdb.SetNX(ctx, key, "me", 30*time.Second).Result(); err != nil || !ok {
				return fmt.Errorf("setnx: %v %w", ok, err)
			}
			return cadScript.Run(ctx, rdb, []string{key}, "me").Err()
		}
	})
}

// parallel64 runs pair (made per goroutine for its own key) on 64
// goroutines.
func parallel64(b *testing.B, pairFor func(key string) func(ctx context.Context) error) {
	var n atomic.Int64
	b.SetParallelism(64 / max(1, runtimeProcs()))
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		pair := pairFor(fmt.Sprintf("bench-%d", n.Add(1)))
		for pb.Next() {
			if err := pair(ctx); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func runtimeProcs() int { return runtime.GOMAXPROCS(0) }

// BenchmarkInterleavedVsFloor alternates one raw-floor pair and one relock
// Lock+Unlock, so both see the same machine at the same moment: on a
// shared machine whose speed drifts, the ratio it reports is steadier than
// that of two benchmarks run one after the other.
func BenchmarkInterleavedVsFloor(b *testing.B) {
	rdb := benchClient(b)
	ctx := context.Background()
	mu := lock.New(rdb, "bench")
	var floor, relock time.Duration
	for b.Loop() {
		floor += rawPair(b, ctx, rdb)
		relock += relockPair(b, ctx, mu)
	}
	b.ReportMetric(float64(floor.Nanoseconds())/float64(b.N)/1000, "floor-µs/pair")
	b.ReportMetric(float64(relock.Nanoseconds())/float64(b.N)/1000, "relock-µs/pair")
	b.ReportMetric(float64(floor)/float64(relock), "relock/floor-pairs/s")
}

// BenchmarkInterleavedVsFloorOneReplica is BenchmarkInterleavedVsFloor on
// a master with one replica on loopback: relock's pair carries the WAIT of
// replica sync; the floor is the same unsynced SET NX / delete pair, and
// the synced floor adds WAIT 1 to the SET NX in one pipeline.
func BenchmarkInterleavedVsFloorOneReplica(b *testing.B) {
	g := redistest.StartReplicated(b, 1)
	rdb := g.Master.Client(b, func(o *redis.Options) { o.PoolSize = 64 })
	ctx := context.Background()
	mu := lock.New(rdb, "bench")
	var floor, synced, relock time.Duration
	for b.Loop() {
		floor += rawPair(b, ctx, rdb)
		t1 := time.Now()
		pipe := rdb.Pipeline()
		set := pipe.SetNX(ctx, "raw", "me", 30*time.Second)
		wait := redis.NewIntCmd(ctx, "wait", 1, 1000)
		_ = pipe.Process(ctx, wait)
		if _, err := pipe.Exec(ctx); err != nil || !set.Val() || wait.Val() != 1 {
			b.Fatal(err, set.Val(), wait.Val())
		}
		if err := cadScript.Run(ctx, rdb, []string{"raw"}, "me").Err(); err != nil {
			b.Fatal(err)
		}
		synced += time.Since(t1)
		relock += relockPair(b, ctx, mu)
	}
	b.ReportMetric(float64(floor.Nanoseconds())/float64(b.N)/1000, "floor-µs/pair")
	b.ReportMetric(float64(synced.Nanoseconds())/float64(b.N)/1000, "synced-floor-µs/pair")
	b.ReportMetric(float64(relock.Nanoseconds())/float64(b.N)/1000, "relock-µs/pair")
	b.ReportMetric(float64(floor)/float64(relock), "relock/floor-pairs/s")
	b.ReportMetric(float64(synced)/float64(relock), "relock/synced-floor-pairs/s")
}

// rawPair takes and gives back the floor's lock once (SET NX PX, then a
// compare-and-delete script) and returns how long it took.
func rawPair(b *testing.B, ctx context.Context, rdb *redis.Client) time.Duration {
	start := time.Now()
	if ok, err := rdb.SetNX(ctx, "raw", "me", 30*time.Second).Result(); err != nil || !ok {
		b.Fatal(ok, err)
	}
	if err := cadScript.Run(ctx, rdb, []string{"raw"}, "me").Err(); err != nil {
		b.Fatal(err)
	}
	return time.Since(start)
}

// relockPair takes and gives back mu once and returns how long it took.
func relockPair(b *testing.B, ctx context.Context, mu *lock.Mutex) time.Duration {
	start := time.Now()
	held, err := mu.Lock(ctx)
	if err != nil {
		b.Fatal(err)
	}
	if err := mu.Unlock(held); err != nil {
		b.Fatal(err)
	}
	return time.Since(start)
}
