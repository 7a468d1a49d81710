package watchdog_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/relock-go/relock/lock"
	"github.com/relock-go/relock/watchdog"
)

func ExampleWatchdog_Stats() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()

	wd := watchdog.New()
	mu := lock.New(rdb, "report", lock.WithWatchdog(wd))
	held, _ := mu.Lock(context.Background())
	s := wd.Stats()
	fmt.Println("held:", s.Held, "lost:", s.Lost)
	_ = mu.Unlock(held)
	fmt.Println("held:", wd.Stats().Held)
	// Output:
	// held: 1 lost: 0
	// held: 0
}

// Default is the watchdog every primitive uses unless given another.
func ExampleDefault() {
	wd := watchdog.Default()
	fmt.Println(watchdog.Default() == wd)
	// Output: true
}

// New makes a watchdog of one's own, for a set of primitives that should
// not share the process's (or, with a fake clock, for tests).
func ExampleNew() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()

	wd := watchdog.New(watchdog.WithTick(50 * time.Millisecond))
	mu := lock.New(rdb, "report", lock.WithWatchdog(wd))
	held, _ := mu.Lock(context.Background())
	fmt.Println("leases:", wd.Stats().Held, "default's:", watchdog.Default().Stats().Held)
	_ = mu.Unlock(held)
	// Output: leases: 1 default's: 0
}

// NewFakeClock makes a clock that moves only when told, so that tests of
// lease renewal and loss need not wait: a fixed 1 min lease is lost, and
// its holder told, once the clock has moved a minute.
func ExampleNewFakeClock() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()

	clk := watchdog.NewFakeClock(time.Unix(0, 0))
	wd := watchdog.New(watchdog.WithClock(clk))
	mu := lock.New(rdb, "report", lock.WithWatchdog(wd), lock.WithLeaseTime(time.Minute))
	held, _ := mu.Lock(context.Background())
	defer func() { _ = mu.Unlock(held) }()

	clk.Advance(30 * time.Second)
	fmt.Println("after 30 s:", held.Err())
	clk.Advance(30 * time.Second)
	<-held.Done()
	fmt.Println("after 1 min:", errors.Is(context.Cause(held), lock.ErrLockLost))
	// Output:
	// after 30 s: <nil>
	// after 1 min: true
}

// A FakeClock's Now is where it was set, plus what Advance added.
func ExampleFakeClock_Now() {
	start := time.Date(2024, 1, 1, 12, 0, 0, 0, time.UTC)
	clk := watchdog.NewFakeClock(start)
	clk.Advance(90 * time.Second)
	fmt.Println(clk.Now().Sub(start))
	// Output: 1m30s
}

// Advance fires the timers that fall due, in deadline order.
func ExampleFakeClock_Advance() {
	clk := watchdog.NewFakeClock(time.Unix(0, 0))
	t := clk.NewTimer(time.Second)
	clk.Advance(500 * time.Millisecond)
	select {
	case <-t.C():
		fmt.Println("fired early")
	default:
		fmt.Println("not yet")
	}
	clk.Advance(500 * time.Millisecond)
	fmt.Println((<-t.C()).Unix())
	// Output:
	// not yet
	// 1
}

// NewTimer returns a timer on the fake clock; Stop disarms it.
func ExampleFakeClock_NewTimer() {
	clk := watchdog.NewFakeClock(time.Unix(0, 0))
	t := clk.NewTimer(time.Minute)
	fmt.Println(clk.Pending(), t.Stop(), clk.Pending())
	// Output: 1 true 0
}

// Pending tells a test that the code under test is asleep on the clock,
// so that an Advance is not made before the timer it should fire.
func ExampleFakeClock_Pending() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()

	clk := watchdog.NewFakeClock(time.Unix(0, 0))
	wd := watchdog.New(watchdog.WithClock(clk))
	mu := lock.New(rdb, "report", lock.WithWatchdog(wd))
	held, _ := mu.Lock(context.Background())
	for clk.Pending() == 0 { // the wheel sleeps on the fake clock
		time.Sleep(time.Millisecond)
	}
	fmt.Println(clk.Pending() > 0)
	_ = mu.Unlock(held)
	// Output: true
}

// WithClock sets the time source; production uses the real clock. With a
// fake one, a test moves the watchdog's time itself: 10 s on, the lease
// of a held lock is renewed back to its 30 s.
func ExampleWithClock() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()

	clk := watchdog.NewFakeClock(time.Unix(1700000000, 0))
	wd := watchdog.New(watchdog.WithClock(clk))
	mu := lock.New(rdb, "report", lock.WithWatchdog(wd))
	held, _ := mu.Lock(context.Background())
	defer func() { _ = mu.Unlock(held) }()
	for clk.Pending() == 0 {
		time.Sleep(time.Millisecond)
	}
	mr.FastForward(10 * time.Second) // first: the renewal must find the key 20 s from its end
	clk.Advance(10 * time.Second)
	for wd.Stats().Renewed == 0 {
		time.Sleep(time.Millisecond)
	}
	fmt.Println("ttl after renewal:", mr.TTL("report"))
	// Output: ttl after renewal: 30s
}

// WithTick sets the wheel's resolution. A lease is declared lost at most
// one tick late, so the loss margin includes a tick: with a coarse tick
// the holder is told earlier.
func ExampleWithTick() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()

	for _, tick := range []time.Duration{10 * time.Millisecond, time.Second} {
		clk := watchdog.NewFakeClock(time.Unix(0, 0))
		wd := watchdog.New(watchdog.WithClock(clk), watchdog.WithTick(tick))
		mu := lock.New(rdb, "report", lock.WithWatchdog(wd), lock.WithLeaseTime(10*time.Second))
		held, _ := mu.Lock(context.Background())
		clk.Advance(9500 * time.Millisecond)
		lost := false
		select {
		case <-held.Done():
			lost = true
		case <-time.After(100 * time.Millisecond): // the wheel runs at once when due
		}
		fmt.Printf("tick %v: lost after 9.5 s of 10 s: %v\n", tick, lost)
		_ = mu.Unlock(held)
	}
	// Output:
	// tick 10ms: lost after 9.5 s of 10 s: false
	// tick 1s: lost after 9.5 s of 10 s: true
}

// WithBatchSize bounds the leases one script renews: three locks whose
// leases fall due together, at most two per script, go in two scripts of
// one pipeline.
func ExampleWithBatchSize() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	ctx := context.Background()

	clk := watchdog.NewFakeClock(time.Unix(0, 0))
	wd := watchdog.New(watchdog.WithClock(clk), watchdog.WithBatchSize(2))
	// The first renewal loads the renew script (NOSCRIPT, then sent
	// again); a lease renewed once before the count is taken avoids it.
	warm := lock.New(rdb, "warm", lock.WithWatchdog(wd))
	w, _ := warm.Lock(ctx)
	for clk.Pending() == 0 {
		time.Sleep(time.Millisecond)
	}
	clk.Advance(10 * time.Second)
	for wd.Stats().Renewed == 0 {
		time.Sleep(time.Millisecond)
	}
	_ = warm.Unlock(w)

	for _, name := range []string{"job:1", "job:2", "job:3"} {
		mu := lock.New(rdb, name, lock.WithWatchdog(wd))
		held, _ := mu.Lock(ctx)
		defer func() { _ = mu.Unlock(held) }()
	}
	before := wd.Stats()
	clk.Advance(10 * time.Second)
	for wd.Stats().Renewed < before.Renewed+3 {
		time.Sleep(time.Millisecond)
	}
	s := wd.Stats()
	fmt.Println("scripts:", s.Scripts-before.Scripts, "round trips:", s.RoundTrips-before.RoundTrips)
	// Output: scripts: 2 round trips: 1
}

// WithTracerProvider sends the span of each renewal pipeline to tp.
func ExampleWithTracerProvider() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()

	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer func() { _ = tp.Shutdown(context.Background()) }()

	clk := watchdog.NewFakeClock(time.Unix(0, 0))
	wd := watchdog.New(watchdog.WithClock(clk), watchdog.WithTracerProvider(tp))
	mu := lock.New(rdb, "report", lock.WithWatchdog(wd))
	held, _ := mu.Lock(context.Background())
	for clk.Pending() == 0 {
		time.Sleep(time.Millisecond)
	}
	clk.Advance(10 * time.Second)
	for len(rec.Ended()) == 0 {
		time.Sleep(time.Millisecond)
	}
	fmt.Println(rec.Ended()[0].Name())
	_ = mu.Unlock(held)
	// Output: watchdog renew
}
