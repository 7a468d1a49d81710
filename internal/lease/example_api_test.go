package lease_test

import (
	"context"
	"fmt"
	"testing/fstest"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/internal/conn"
	"github.com/relock-go/relock/internal/lease"
	"github.com/relock-go/relock/internal/scripts"
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
// SET NX PX, renewed by a RenewScript (the primitives of this module
// embed theirs). A fake clock and miniredis's
// FastForward let 10 s pass at once.
func ExampleWatchdog_Start() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	ctx := context.Background()

	jobKind := &lease.RenewScript{KeysPer: 1,
		Lua: scripts.Load(fstest.MapFS{"renew.lua": {Data: []byte(renewJob)}}, "renew.lua")}
	clk := lease.NewFakeClock(time.Unix(0, 0))
	wd := lease.New(lease.WithClock(clk))

	sentAt := wd.Now() // read before the acquire is sent
	rdb.SetNX(ctx, "job:7", "worker-1", 30*time.Second)
	lease := wd.Start(lease.Spec{
		Renewer: jobKind,
		Targets: []lease.Target{{Client: conn.Of(rdb), Keys: []string{"job:7"}, Arg: "worker-1"}},
		Timeout: 30 * time.Second,
		Renew:   true,
		Name:    "job:7", Primitive: "job",
	}, sentAt)
	defer lease.Release()

	for clk.Pending() == 0 { // the wheel sleeps on the fake clock
		time.Sleep(time.Millisecond)
	}
	mr.FastForward(10 * time.Second) // first: the renewal must find the key 20 s from its end
	clk.Advance(10 * time.Second)
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

	wd := lease.New()
	id := lease.ID{Lock: "job:7", Owner: "worker-1"}
	l := wd.Start(lease.Spec{
		Targets: []lease.Target{{Client: conn.Of(rdb), Keys: []string{"job:7"}}},
		Timeout: time.Minute, // a fixed lease: tracked, not renewed
		ID:      id,
	}, wd.Now())
	fmt.Println(wd.Find(conn.Of(rdb), id) == l)
	l.Release()
	fmt.Println(wd.Find(conn.Of(rdb), id) == nil)
	// Output:
	// true
	// true
}

// Now is the watchdog's clock, the one lease times are measured on.
func ExampleWatchdog_Now() {
	start := time.Date(2024, 1, 1, 12, 0, 0, 0, time.UTC)
	clk := lease.NewFakeClock(start)
	wd := lease.New(lease.WithClock(clk))
	clk.Advance(90 * time.Second)
	fmt.Println(wd.Now().Sub(start))
	// Output: 1m30s
}

// Stats counts the watchdog's work, for monitoring.

// Check tells a holder, before it writes, whether its lease still holds;
// it declares the loss itself when the wheel has not got there yet (the
// process was paused, say).
func ExampleLease_Check() {
	clk := lease.NewFakeClock(time.Unix(0, 0))
	wd := lease.New(lease.WithClock(clk))
	lease := wd.Start(lease.Spec{Timeout: 5 * time.Second, Name: "report", Primitive: "lock"}, wd.Now())
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
	clk := lease.NewFakeClock(time.Unix(0, 0))
	wd := lease.New(lease.WithClock(clk))
	lease := wd.Start(lease.Spec{Timeout: 30 * time.Second, Renew: true}, wd.Now())
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
	wd := lease.New()
	l := wd.Start(lease.Spec{Timeout: time.Minute, Name: "report", Primitive: "lock"}, wd.Now())
	defer l.Release()
	l.OnLost(lease.LostFunc(func(err error) { fmt.Println("told:", err) }))
	l.Lose("key gone")
	// Output: told: relock: renew lock "report": lock lost: key gone
}

// Lost reports the loss without declaring it (see Check).
func ExampleLease_Lost() {
	wd := lease.New()
	lease := wd.Start(lease.Spec{Timeout: time.Minute, Name: "report", Primitive: "lock"}, wd.Now())
	defer lease.Release()
	fmt.Println(lease.Lost())
	lease.Lose("key gone")
	fmt.Println(lease.Lost())
	// Output:
	// <nil>
	// relock: renew lock "report": lock lost: key gone
}

// OnLost registers what to do when the lease is lost, such as cancel the
// hold's context; RemoveLost takes the id it returns to unregister it.
func ExampleLease_OnLost() {
	wd := lease.New()
	l := wd.Start(lease.Spec{Timeout: time.Minute, Name: "report", Primitive: "lock"}, wd.Now())
	defer l.Release()

	hold, cancel := context.WithCancelCause(context.Background())
	l.OnLost(lease.LostFunc(cancel))
	id := l.OnLost(lease.LostFunc(func(error) { fmt.Println("never called") }))
	l.RemoveLost(id)

	l.Lose("key gone")
	fmt.Println(context.Cause(hold))
	l.OnLost(lease.LostFunc(func(error) { fmt.Println("already lost: called at once") }))
	// Output:
	// relock: renew lock "report": lock lost: key gone
	// already lost: called at once
}

// RetainAt lets a re-entry share the lease: one more reference, the
// lease measured from the later send, the larger token kept.
func ExampleLease_RetainAt() {
	wd := lease.New()
	lease := wd.Start(lease.Spec{Timeout: time.Minute, Token: 7}, wd.Now())
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
	wd := lease.New()
	lease := wd.Start(lease.Spec{Timeout: time.Minute}, wd.Now())
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
	wd := lease.New()
	lease := wd.Start(lease.Spec{Timeout: time.Minute}, wd.Now())
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

	wd := lease.New()
	id := lease.ID{Lock: "report"}
	l := wd.Start(lease.Spec{Timeout: time.Minute, ID: id,
		Targets: []lease.Target{{Client: conn.Of(rdb), Keys: []string{"report"}}}}, wd.Now())
	l.Stop()
	l.Lose("key gone")
	fmt.Println(wd.Find(conn.Of(rdb), id) == nil, l.Lost())
	// Output: true <nil>
}

// Timeout is the lease time the acquire wrote.
func ExampleLease_Timeout() {
	wd := lease.New()
	lease := wd.Start(lease.Spec{Timeout: 30 * time.Second}, wd.Now())
	defer lease.Release()
	fmt.Println(lease.Timeout())
	// Output: 30s
}

// Token is the highest fencing token of the holds sharing the lease.
func ExampleLease_Token() {
	wd := lease.New()
	lease := wd.Start(lease.Spec{Timeout: time.Minute, Token: 41}, wd.Now())
	lease.RetainAt(wd.Now(), 42)
	fmt.Println(lease.Token())
	lease.Release()
	lease.Release()
	// Output: 42
}
