package rwlock_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/internal/testkit/redistest"
	"github.com/relock-go/relock/rwlock"
)

// Benchmarks run against a real redis-server on loopback: miniredis would
// measure miniredis. Compare with lock's BenchmarkUncontendedLockUnlock and
// BenchmarkRawFloor.

func benchClient(b *testing.B) *redis.Client {
	srv := redistest.StartServer(b)
	return srv.Client(b, func(o *redis.Options) { o.PoolSize = 64 })
}

func BenchmarkUncontendedRLockRUnlock(b *testing.B) {
	rdb := benchClient(b)
	ctx := context.Background()
	rw := rwlock.New(rdb, "bench")
	b.ReportAllocs()
	for b.Loop() {
		r, err := rw.RLock(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if err := rw.RUnlock(r); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkUncontendedLockUnlock(b *testing.B) {
	rdb := benchClient(b)
	ctx := context.Background()
	rw := rwlock.New(rdb, "bench")
	b.ReportAllocs()
	for b.Loop() {
		w, err := rw.Lock(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if err := rw.Unlock(w); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMixed16Readers1Writer: 16 goroutines read (an op is one read
// section: RLock, no work, RUnlock) while one goroutine writes in a loop
// until the reads are done. It reports the throughput of each side and
// fails on any overlap of a writer with anyone.
func BenchmarkMixed16Readers1Writer(b *testing.B) { benchMixed(b, 16, true) }

// BenchmarkParallel16Readers is the same without the writer: what the
// writer costs the readers.
func BenchmarkParallel16Readers(b *testing.B) { benchMixed(b, 16, false) }

func benchMixed(b *testing.B, readers int, writer bool) {
	rdb := benchClient(b)
	ctx := context.Background()
	rw := rwlock.New(rdb, "bench")
	var (
		next          atomic.Int64
		reads, writes atomic.Int64
		occ           occupancy
		stop          = make(chan struct{})
		wg, wwg       sync.WaitGroup
	)
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	if writer {
		wwg.Add(1)
		go func() {
			defer wwg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				w, err := rw.Lock(ctx)
				if err != nil {
					b.Error(err)
					return
				}
				occ.enterWrite()
				occ.exitWrite()
				if err := rw.Unlock(w); err != nil {
					b.Error(err)
					return
				}
				writes.Add(1)
			}
		}()
	}
	for range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(b.N) {
				r, err := rw.RLock(ctx)
				if err != nil {
					b.Error(err)
					return
				}
				occ.enterRead()
				occ.exitRead()
				if err := rw.RUnlock(r); err != nil {
					b.Error(err)
					return
				}
				reads.Add(1)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(stop)
	wwg.Wait()
	b.StopTimer()
	if n := occ.overlaps.Load(); n != 0 {
		b.Fatalf("%d sections overlapped a writer", n)
	}
	b.ReportMetric(float64(reads.Load())/elapsed.Seconds(), "reads/s")
	if writer {
		b.ReportMetric(float64(writes.Load())/elapsed.Seconds(), "writes/s")
	}
	b.ReportMetric(float64(occ.maxReaders.Load()), "max-readers-inside")
}
