package semaphore_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/internal/testkit/redistest"
	"github.com/relock-go/relock/semaphore"
)

// Benchmarks run against a real redis-server on loopback: miniredis would
// measure miniredis.

func benchClient(b *testing.B) *redis.Client {
	srv := redistest.StartServer(b)
	return srv.Client(b, func(o *redis.Options) { o.PoolSize = 64 })
}

// BenchmarkUncontendedAcquireRelease: one goroutine, Acquire(1) then
// Release: two scripts, no pub/sub.
func BenchmarkUncontendedAcquireRelease(b *testing.B) {
	rdb := benchClient(b)
	ctx := context.Background()
	s := semaphore.New(rdb, "bench", 4)
	b.ReportAllocs()
	for b.Loop() {
		held, err := s.Acquire(ctx, 1)
		if err != nil {
			b.Fatal(err)
		}
		if err := s.Release(held); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkContended32On4: 32 goroutines share 4 permits; each op is one
// Acquire(1), 100 µs of work (a sleep: with no work at all a holder is
// inside for nanoseconds and holders never meet, so the bound would go
// unexercised), Release. It reports the throughput and the most holders
// seen inside at once, and fails if that ever exceeds 4.
func BenchmarkContended32On4(b *testing.B) {
	rdb := benchClient(b)
	ctx := context.Background()
	const (
		g    = 32
		size = 4
		work = 100 * time.Microsecond
	)
	s := semaphore.New(rdb, "bench", size)
	var next atomic.Int64
	var inside, maxInside atomic.Int32
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for range g {
		wg.Go(func() {
			for next.Add(1) <= int64(b.N) {
				held, err := s.Acquire(ctx, 1)
				if err != nil {
					b.Error(err)
					return
				}
				v := inside.Add(1)
				for m := maxInside.Load(); v > m && !maxInside.CompareAndSwap(m, v); m = maxInside.Load() {
				}
				time.Sleep(work)
				inside.Add(-1)
				if err := s.Release(held); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	if m := maxInside.Load(); m > size {
		b.Fatalf("%d holders inside at once, size %d", m, size)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "ops/s")
	b.ReportMetric(float64(maxInside.Load()), "max-inside")
}
