package semaphore_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/relock-go/relock/semaphore"
	"github.com/relock-go/relock/tracing"
	"github.com/relock-go/relock/watchdog"
)

// New only describes the semaphore; the first acquire records its size in
// Redis. A bad argument is reported by the first call, before anything is
// written.
func ExampleNew() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	ctx := context.Background()

	exports := semaphore.New(rdb, "exports", 4)
	fmt.Println(exports.Name(), exports.Size(), mr.Exists("exports"))
	p, _ := exports.Acquire(ctx, 1)
	fmt.Println("size in Redis:", mr.HGet("exports", "size"))
	_ = exports.Release(p)

	_, err := semaphore.New(rdb, "exports", 0).Acquire(ctx, 1)
	fmt.Println(errors.Is(err, semaphore.ErrInvalidArgument))
	// Output:
	// exports 4 false
	// size in Redis: 4
	// true
}

// Acquire waits, first come first served, until n permits are free. Here
// a heavy job needs 3 of 3 permits and waits for the light one to finish.
func ExampleSemaphore_Acquire() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()

	cpu := semaphore.New(rdb, "cpu", 3)
	light, err := cpu.Acquire(context.Background(), 1)
	if err != nil {
		fmt.Println(err)
		return
	}

	done := make(chan struct{})
	go func() {
		defer close(done)
		heavy, err := cpu.Acquire(context.Background(), 3) // waits for the light job
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println("heavy job runs alone")
		_ = cpu.Release(heavy)
	}()

	fmt.Println("light job done")
	_ = cpu.Release(light)
	<-done
	// Output:
	// light job done
	// heavy job runs alone
}

// TryAcquire takes the permits only if they are free now: a request that
// would have to wait is turned away (shed load instead of queueing).
func ExampleSemaphore_TryAcquire() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	ctx := context.Background()

	uploads := semaphore.New(rdb, "uploads", 2)
	a, _ := uploads.TryAcquire(ctx, 1)
	b, _ := uploads.TryAcquire(ctx, 1)
	_, err := uploads.TryAcquire(ctx, 1)
	fmt.Println("third upload:", errors.Is(err, semaphore.ErrNotAcquired))
	_ = uploads.Release(a)
	_ = uploads.Release(b)
	// Output: third upload: true
}

// Release gives back exactly the permits of the acquisition that returned
// its context; a second Release of it is ErrNotHeld.
func ExampleSemaphore_Release() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	ctx := context.Background()

	pool := semaphore.New(rdb, "pool", 5)
	p, _ := pool.Acquire(ctx, 3)
	free, _ := pool.Available(ctx)
	fmt.Println("available:", free)
	fmt.Println(pool.Release(p))
	free, _ = pool.Available(ctx)
	fmt.Println("available:", free)
	fmt.Println(errors.Is(pool.Release(p), semaphore.ErrNotHeld))
	// Output:
	// available: 2
	// <nil>
	// available: 5
	// true
}

// Available counts the free permits, reclaiming those of crashed holders
// first.
func ExampleSemaphore_Available() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	ctx := context.Background()

	pool := semaphore.New(rdb, "pool", 4)
	free, _ := pool.Available(ctx)
	fmt.Println(free)
	p, _ := pool.Acquire(ctx, 3)
	free, _ = pool.Available(ctx)
	fmt.Println(free)
	_ = pool.Release(p)
	// Output:
	// 4
	// 1
}

// Resize changes the size recorded in Redis on purpose; a Semaphore built
// with the old size then gets ErrSizeMismatch, one built with the new size
// agrees. Permits already held stay held.
func ExampleSemaphore_Resize() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	ctx := context.Background()

	workers := semaphore.New(rdb, "workers", 2)
	p, _ := workers.Acquire(ctx, 2)

	if err := workers.Resize(ctx, 5); err != nil {
		fmt.Println(err)
		return
	}
	free, _ := workers.Available(ctx)
	fmt.Println("size:", workers.Size(), "available:", free)

	_, err := semaphore.New(rdb, "workers", 2).Available(ctx) // an old deployment
	fmt.Println(errors.Is(err, semaphore.ErrSizeMismatch))
	free, err = semaphore.New(rdb, "workers", 5).Available(ctx) // a new one
	fmt.Println(free, err)
	_ = workers.Release(p)
	// Output:
	// size: 5 available: 3
	// true
	// 3 <nil>
}

// Size is the size this Semaphore was built with (or last resized to).
func ExampleSemaphore_Size() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()

	fmt.Println(semaphore.New(rdb, "exports", 4).Size())
	// Output: 4
}

// Name is the Redis key of the semaphore's hash.
func ExampleSemaphore_Name() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()

	exports := semaphore.New(rdb, "exports", 4)
	p, _ := exports.Acquire(context.Background(), 1)
	fmt.Println(exports.Name(), mr.Exists(exports.Name()))
	_ = exports.Release(p)
	// Output: exports true
}

// WithLeaseTime gives every permit a fixed lease and no renewal: a job
// that overruns it loses its permits to others. A fake clock for the
// watchdog and a pinned server clock (the scripts read Redis's TIME) let
// the lease pass here without waiting.
func ExampleWithLeaseTime() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	ctx := context.Background()

	start := time.Unix(1700000000, 0)
	mr.SetTime(start)
	clk := watchdog.NewFakeClock(start)
	jobs := semaphore.New(rdb, "jobs", 1, semaphore.WithLeaseTime(time.Minute),
		semaphore.WithWatchdog(watchdog.New(watchdog.WithClock(clk))))
	p, _ := jobs.Acquire(ctx, 1)

	for clk.Pending() == 0 { // the watchdog sleeps on the fake clock
		time.Sleep(time.Millisecond)
	}
	clk.Advance(time.Minute)
	mr.SetTime(start.Add(time.Minute))
	<-p.Done()
	fmt.Println(errors.Is(context.Cause(p), semaphore.ErrLockLost))
	free, _ := jobs.Available(ctx) // the expired permit is reclaimed
	fmt.Println("available:", free)
	// Output:
	// true
	// available: 1
}

// WithWatchdogTimeout sets the permit lease the watchdog keeps renewing:
// how long a crashed holder's permits stay taken.
func ExampleWithWatchdogTimeout() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	ctx := context.Background()

	start := time.Unix(1700000000, 0)
	mr.SetTime(start) // the scripts read Redis's TIME; pin it
	jobs := semaphore.New(rdb, "jobs", 2, semaphore.WithWatchdogTimeout(3*time.Second))
	p, _ := jobs.Acquire(ctx, 2)
	free, _ := jobs.Available(ctx)
	fmt.Println("available:", free)

	// A holder that crashed stops renewing: moving the server clock 3 s
	// on stands in for that, and its permits come back.
	mr.SetTime(start.Add(3 * time.Second))
	free, _ = jobs.Available(ctx)
	fmt.Println("available:", free)
	_ = jobs.Release(p)
	// Output:
	// available: 0
	// available: 2
}

// WithWaitTimeout bounds how long Acquire waits: ErrNotAcquired after it.
func ExampleWithWaitTimeout() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	ctx := context.Background()

	jobs := semaphore.New(rdb, "jobs", 1, semaphore.WithWaitTimeout(50*time.Millisecond))
	p, _ := jobs.Acquire(ctx, 1)
	_, err := jobs.Acquire(ctx, 1) // gives up after 50 ms
	fmt.Println(errors.Is(err, semaphore.ErrNotAcquired))
	_ = jobs.Release(p)
	// Output: true
}

// WithUnlockTimeout bounds Release, which completes even when its context
// is done.
func ExampleWithUnlockTimeout() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	ctx := context.Background()

	jobs := semaphore.New(rdb, "jobs", 2, semaphore.WithUnlockTimeout(time.Second))
	p, _ := jobs.Acquire(ctx, 2)
	request, cancel := context.WithCancel(p)
	cancel()
	fmt.Println(jobs.Release(request))
	free, _ := jobs.Available(ctx)
	fmt.Println("available:", free)
	// Output:
	// <nil>
	// available: 2
}

// WithTracerProvider sends the span of each acquire to tp.
func ExampleWithTracerProvider() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	ctx := context.Background()

	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer func() { _ = tp.Shutdown(ctx) }()

	jobs := semaphore.New(rdb, "jobs", 4, semaphore.WithTracerProvider(tp))
	p, _ := jobs.Acquire(ctx, 2)
	_ = jobs.Release(p)
	for _, s := range rec.Ended() {
		if s.Name() != tracing.SpanAcquireSemaphore {
			continue
		}
		for _, a := range s.Attributes() {
			if a.Key == tracing.Permits || a.Key == tracing.Size {
				fmt.Println(s.Name(), a.Key, a.Value.AsInt64())
			}
		}
	}
	// Unordered output:
	// acquire semaphore semaphore.permits 2
	// acquire semaphore semaphore.size 4
}

// WithWatchdog sets the watchdog that renews the permits; here one on a
// fake clock, so that a renewal (every 10 s of the default 30 s lease)
// happens without waiting.
func ExampleWithWatchdog() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()

	clk := watchdog.NewFakeClock(time.Unix(0, 0))
	wd := watchdog.New(watchdog.WithClock(clk))
	jobs := semaphore.New(rdb, "jobs", 2, semaphore.WithWatchdog(wd))
	p, _ := jobs.Acquire(context.Background(), 1)

	for clk.Pending() == 0 { // the watchdog sleeps on the fake clock
		time.Sleep(time.Millisecond)
	}
	clk.Advance(10 * time.Second)
	for wd.Stats().Renewed == 0 {
		time.Sleep(time.Millisecond)
	}
	fmt.Println("renewed:", wd.Stats().Renewed, p.Err())
	_ = jobs.Release(p)
	// Output: renewed: 1 <nil>
}

// WithLogger sends the warnings about a server that undermines a
// guarantee (an eviction policy that may evict lock keys) to a logger of
// the service's own; a nil logger is refused.
func ExampleWithLogger() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	ctx := context.Background()

	logger := slog.New(slog.NewTextHandler(os.Stderr, nil)).With("component", "locks")
	s := semaphore.New(rdb, "jobs", 2, semaphore.WithLogger(logger))
	held, err := s.TryAcquire(ctx, 1)
	fmt.Println(err)
	_ = s.Release(held)
	_, err = semaphore.New(rdb, "jobs", 2, semaphore.WithLogger(nil)).TryAcquire(ctx, 1)
	fmt.Println(errors.Is(err, semaphore.ErrInvalidArgument))
	// Output:
	// <nil>
	// true
}
