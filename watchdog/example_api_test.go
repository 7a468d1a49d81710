package watchdog_test

import (
	"context"
	"fmt"
	"testing/fstest"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/relock-go/relock/internal/scripts"
	"github.com/relock-go/relock/lock"
	"github.com/relock-go/relock/watchdog"
)

// renewJob renews string keys whose value is their owner: per lease, one
// key, and in ARGV the lease time in milliseconds and the owner.
const renewJob = `
local out = {}
for i = 1, #KEYS do
  if redis.call('get', KEYS[i]) == ARGV[2 * i] then
    redis.call('pexpire', KEYS[i], ARGV[2 * i - 1])
    out[i] = 1
  else
    out[i] = 0
  end
end
return out`

// Start keeps a lease alive for a primitive: here a plain key taken with
// SET NX PX, renewed by a Kind's script (the primitives of this module
// embed theirs; scripts is internal to it). A fake clock and miniredis's
// FastForward let 10 s pass at once.
func ExampleWatchdog_Start() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	ctx := context.Background()

	jobKind := &watchdog.Kind{Name: "job", KeysPer: 1, ArgsPer: 1,
		Script: scripts.Load(fstest.MapFS{"renew.lua": {Data: []byte(renewJob)}}, "renew.lua")}
	clk := watchdog.NewFakeClock(time.Unix(0, 0))
	wd := watchdog.New(watchdog.WithClock(clk))

	sentAt := wd.Now() // read before the acquire is sent
	rdb.SetNX(ctx, "job:7", "worker-1", 30*time.Second)
	lease := wd.Start(watchdog.Spec{
		Kind:    jobKind,
		Targets: []watchdog.Target{{Client: rdb, Keys: []string{"job:7"}, Args: []any{"worker-1"}}},
		Timeout: 30 * time.Second,
		Renew:   true,
		Name:    "job:7", Primitive: "job",
	}, sentAt)
	defer lease.Release()

	for clk.Pending() == 0 { // the wheel sleeps on the fake clock
		time.Sleep(time.Millisecond)
	}
	clk.Advance(10 * time.Second)
	mr.FastForward(10 * time.Second)
	for wd.Stats().Renewed == 0 {
		time.Sleep(time.Millisecond)
	}
	fmt.Println("ttl after renewal:", mr.TTL("job:7"))
	// Output: ttl after renewal: 30s
}

// Find returns the lease registered under a client and an ID, so that a
// re-entry shares its lease instead of starting another.
func ExampleWatchdog_Find() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()

	wd := watchdog.New()
	lease := wd.Start(watchdog.Spec{
		Targets: []watchdog.Target{{Client: rdb, Keys: []string{"job:7"}}},
		Timeout: time.Minute, // a fixed lease: tracked, not renewed
		ID:      "job:7/worker-1",
	}, wd.Now())
	fmt.Println(wd.Find(rdb, "job:7/worker-1") == lease)
	lease.Release()
	fmt.Println(wd.Find(rdb, "job:7/worker-1") == nil)
	// Output:
	// true
	// true
}

// Now is the watchdog's clock, the one lease times are measured on.
func ExampleWatchdog_Now() {
	start := time.Date(2024, 1, 1, 12, 0, 0, 0, time.UTC)
	clk := watchdog.NewFakeClock(start)
	wd := watchdog.New(watchdog.WithClock(clk))
	clk.Advance(90 * time.Second)
	fmt.Println(wd.Now().Sub(start))
	// Output: 1m30s
}

// Stats counts the watchdog's work, for monitoring.
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
	fmt.Println(watchdog.Default() == watchdog.Default())
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
// lease renewal and loss need not wait.
func ExampleNewFakeClock() {
	clk := watchdog.NewFakeClock(time.Unix(0, 0))
	wd := watchdog.New(watchdog.WithClock(clk))
	lease := wd.Start(watchdog.Spec{Timeout: time.Minute, Name: "report", Primitive: "lock"}, wd.Now())
	defer lease.Release()

	clk.Advance(30 * time.Second)
	fmt.Println(lease.Lapsed())
	clk.Advance(30 * time.Second)
	fmt.Println(lease.Lapsed())
	// Output:
	// false
	// true
}

// WithClock sets the time source; production uses the real clock.
func ExampleWithClock() {
	clk := watchdog.NewFakeClock(time.Unix(1700000000, 0))
	wd := watchdog.New(watchdog.WithClock(clk))
	fmt.Println(wd.Now().Unix())
	// Output: 1700000000
}

// WithTick sets the wheel's resolution. A lease is declared lost at most
// one tick late, so the loss margin includes a tick: with a coarse tick
// the holder is told earlier.
func ExampleWithTick() {
	for _, tick := range []time.Duration{10 * time.Millisecond, time.Second} {
		clk := watchdog.NewFakeClock(time.Unix(0, 0))
		wd := watchdog.New(watchdog.WithClock(clk), watchdog.WithTick(tick))
		lease := wd.Start(watchdog.Spec{Timeout: 10 * time.Second, Name: "report", Primitive: "lock"}, wd.Now())
		clk.Advance(9500 * time.Millisecond)
		fmt.Printf("tick %v: lapsed after 9.5 s of 10 s: %v\n", tick, lease.Lapsed())
		lease.Release()
	}
	// Output:
	// tick 10ms: lapsed after 9.5 s of 10 s: false
	// tick 1s: lapsed after 9.5 s of 10 s: true
}

// WithBatchSize bounds the leases one script renews: three leases due
// together, at most two per script, go in two scripts of one pipeline.
func ExampleWithBatchSize() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	ctx := context.Background()

	jobKind := &watchdog.Kind{Name: "job", KeysPer: 1, ArgsPer: 1,
		Script: scripts.Load(fstest.MapFS{"renew.lua": {Data: []byte(renewJob)}}, "renew.lua")}
	clk := watchdog.NewFakeClock(time.Unix(0, 0))
	wd := watchdog.New(watchdog.WithClock(clk), watchdog.WithBatchSize(2))
	_ = jobKind.Script.Preload(ctx, rdb) // else the first pipeline gets NOSCRIPT and is sent again

	sentAt := wd.Now()
	for _, key := range []string{"job:1", "job:2", "job:3"} {
		rdb.SetNX(ctx, key, "worker-1", 30*time.Second)
		lease := wd.Start(watchdog.Spec{Kind: jobKind, Timeout: 30 * time.Second, Renew: true,
			Targets: []watchdog.Target{{Client: rdb, Keys: []string{key}, Args: []any{"worker-1"}}}}, sentAt)
		defer lease.Release()
	}
	for clk.Pending() == 0 {
		time.Sleep(time.Millisecond)
	}
	clk.Advance(10 * time.Second)
	for wd.Stats().Renewed < 3 {
		time.Sleep(time.Millisecond)
	}
	s := wd.Stats()
	fmt.Println("scripts:", s.Scripts, "round trips:", s.RoundTrips)
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

// Check tells a holder, before it writes, whether its lease still holds;
// it declares the loss itself when the wheel has not got there yet (the
// process was paused, say).
func ExampleLease_Check() {
	clk := watchdog.NewFakeClock(time.Unix(0, 0))
	wd := watchdog.New(watchdog.WithClock(clk))
	lease := wd.Start(watchdog.Spec{Timeout: 5 * time.Second, Name: "report", Primitive: "lock"}, wd.Now())
	defer lease.Release()

	fmt.Println(lease.Check())
	clk.Advance(5 * time.Second) // a fixed 5 s lease ends
	fmt.Println(lease.Check())
	// Output:
	// <nil>
	// relock: renew lock "report": lock lost: lease ended
}

// Lapsed tells a late release whether the key could have expired under
// it, even after the lease was stopped.
func ExampleLease_Lapsed() {
	clk := watchdog.NewFakeClock(time.Unix(0, 0))
	wd := watchdog.New(watchdog.WithClock(clk))
	lease := wd.Start(watchdog.Spec{Timeout: 30 * time.Second, Renew: true}, wd.Now())
	lease.Stop() // no more renewals
	fmt.Println(lease.Lapsed())
	clk.Advance(30 * time.Second)
	fmt.Println(lease.Lapsed())
	// Output:
	// false
	// true
}

// Lose declares the lease lost at once, when its holder found its key
// gone; the holders registered with OnLost are told.
func ExampleLease_Lose() {
	wd := watchdog.New()
	lease := wd.Start(watchdog.Spec{Timeout: time.Minute, Name: "report", Primitive: "lock"}, wd.Now())
	defer lease.Release()
	lease.OnLost(func(err error) { fmt.Println("told:", err) })
	lease.Lose("key gone")
	// Output: told: relock: renew lock "report": lock lost: key gone
}

// Lost reports the loss without declaring it (see Check).
func ExampleLease_Lost() {
	wd := watchdog.New()
	lease := wd.Start(watchdog.Spec{Timeout: time.Minute, Name: "report", Primitive: "lock"}, wd.Now())
	defer lease.Release()
	fmt.Println(lease.Lost())
	lease.Lose("key gone")
	fmt.Println(lease.Lost())
	// Output:
	// <nil>
	// relock: renew lock "report": lock lost: key gone
}

// OnLost registers what to do when the lease is lost, such as cancel the
// hold's context; the returned func unregisters it.
func ExampleLease_OnLost() {
	wd := watchdog.New()
	lease := wd.Start(watchdog.Spec{Timeout: time.Minute, Name: "report", Primitive: "lock"}, wd.Now())
	defer lease.Release()

	hold, cancel := context.WithCancelCause(context.Background())
	lease.OnLost(cancel)
	remove := lease.OnLost(func(error) { fmt.Println("never called") })
	remove()

	lease.Lose("key gone")
	fmt.Println(context.Cause(hold))
	lease.OnLost(func(error) { fmt.Println("already lost: called at once") })
	// Output:
	// relock: renew lock "report": lock lost: key gone
	// already lost: called at once
}

// RetainAt lets a re-entry share the lease: one more reference, the
// lease measured from the later send, the larger token kept.
func ExampleLease_RetainAt() {
	wd := watchdog.New()
	lease := wd.Start(watchdog.Spec{Timeout: time.Minute, Token: 7}, wd.Now())
	fmt.Println(lease.RetainAt(wd.Now(), 8), lease.Refs(), lease.Token())
	lease.Release()
	lease.Release()
	fmt.Println(lease.RetainAt(wd.Now(), 9)) // stopped: start a new lease
	// Output:
	// true 2 8
	// false
}

// Refs counts the holds sharing the lease.
func ExampleLease_Refs() {
	wd := watchdog.New()
	lease := wd.Start(watchdog.Spec{Timeout: time.Minute}, wd.Now())
	fmt.Println(lease.Refs())
	lease.RetainAt(wd.Now(), 0)
	fmt.Println(lease.Refs())
	lease.Release()
	lease.Release()
	fmt.Println(lease.Refs())
	// Output:
	// 1
	// 2
	// 0
}

// Release drops one reference and stops the lease with the last one.
func ExampleLease_Release() {
	wd := watchdog.New()
	lease := wd.Start(watchdog.Spec{Timeout: time.Minute}, wd.Now())
	lease.RetainAt(wd.Now(), 0) // a re-entry
	fmt.Println(lease.Release())
	fmt.Println(lease.Release())
	// Output:
	// false
	// true
}

// Stop ends the tracking whatever the references: no renewal is sent
// after it returns, and a lost stopped lease is not reported.
func ExampleLease_Stop() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()

	wd := watchdog.New()
	lease := wd.Start(watchdog.Spec{Timeout: time.Minute, ID: "report",
		Targets: []watchdog.Target{{Client: rdb, Keys: []string{"report"}}}}, wd.Now())
	lease.Stop()
	lease.Lose("key gone")
	fmt.Println(wd.Find(rdb, "report") == nil, lease.Lost())
	// Output: true <nil>
}

// Timeout is the lease time the acquire wrote.
func ExampleLease_Timeout() {
	wd := watchdog.New()
	lease := wd.Start(watchdog.Spec{Timeout: 30 * time.Second}, wd.Now())
	defer lease.Release()
	fmt.Println(lease.Timeout())
	// Output: 30s
}

// Token is the highest fencing token of the holds sharing the lease.
func ExampleLease_Token() {
	wd := watchdog.New()
	lease := wd.Start(watchdog.Spec{Timeout: time.Minute, Token: 41}, wd.Now())
	lease.RetainAt(wd.Now(), 42)
	fmt.Println(lease.Token())
	lease.Release()
	lease.Release()
	// Output: 42
}
