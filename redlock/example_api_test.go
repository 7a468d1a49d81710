package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/relock-go/relock/lock"
	"github.com/relock-go/relock/redlock"
	"github.com/relock-go/relock/tracing"
	"github.com/relock-go/relock/watchdog"
)

// New makes a Redlock over one member per independent master; it is held
// while a majority of them hold it, so it survives a master that is down.
func ExampleNew() {
	var members []redlock.Member
	var masters []*miniredis.Miniredis
	for range 3 {
		mr, _ := miniredis.Run()
		defer mr.Close()
		rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
		defer rdb.Close() // runs before mr.Close
		masters = append(masters, mr)
		members = append(members, lock.New(rdb, "job:cleanup"))
	}
	masters[2].Close() // one master is down

	rl := redlock.New(members, redlock.WithNodeTimeout(100*time.Millisecond))
	held, err := rl.Lock(context.Background())
	fmt.Println("held:", err)
	fmt.Println("on masters:", masters[0].Exists("job:cleanup"), masters[1].Exists("job:cleanup"))

	_ = masters[2].Restart() // back before the unlock, which waits for every member
	_ = rl.Unlock(held)

	_, err = redlock.New(nil).TryLock(context.Background()) // no members
	fmt.Println(errors.Is(err, redlock.ErrInvalidArgument))
	// Output:
	// held: <nil>
	// on masters: true true
	// true
}

// Lock waits, round after round, while another owner holds the quorum.
func ExampleLock_Lock() {
	var members []redlock.Member
	for range 3 {
		mr, _ := miniredis.Run()
		defer mr.Close()
		rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
		defer rdb.Close()
		members = append(members, lock.New(rdb, "job:cleanup"))
	}
	rl := redlock.New(members)

	first, err := rl.Lock(context.Background())
	if err != nil {
		fmt.Println(err)
		return
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		second, err := rl.Lock(context.Background()) // another owner waits
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println("second owner: cleaning up")
		_ = rl.Unlock(second)
	}()

	fmt.Println("first owner: cleaning up")
	_ = rl.Unlock(first)
	<-done
	// Output:
	// first owner: cleaning up
	// second owner: cleaning up
}

// TryLock makes one round; its error says what each member answered.
func ExampleLock_TryLock() {
	var members []redlock.Member
	for range 3 {
		mr, _ := miniredis.Run()
		defer mr.Close()
		rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
		defer rdb.Close()
		members = append(members, lock.New(rdb, "job:cleanup"))
	}
	rl := redlock.New(members)
	held, _ := rl.TryLock(context.Background())

	_, err := rl.TryLock(context.Background()) // another owner
	fmt.Println(errors.Is(err, redlock.ErrNotAcquired))
	fmt.Println(strings.Contains(err.Error(), "won 0 of 3 members, quorum 2"))
	_ = rl.Unlock(held)
	// Output:
	// true
	// true
}

// Unlock releases every member at once; a second Unlock of the same hold
// is ErrNotHeld.
func ExampleLock_Unlock() {
	var members []redlock.Member
	var masters []*miniredis.Miniredis
	for range 3 {
		mr, _ := miniredis.Run()
		defer mr.Close()
		rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
		defer rdb.Close()
		masters = append(masters, mr)
		members = append(members, lock.New(rdb, "job:cleanup"))
	}
	rl := redlock.New(members)
	held, _ := rl.Lock(context.Background())

	fmt.Println(rl.Unlock(held))
	_ = rl.Drain(context.Background()) // the members past the quorum
	fmt.Println("left:", masters[0].Exists("job:cleanup"), masters[1].Exists("job:cleanup"), masters[2].Exists("job:cleanup"))
	fmt.Println(errors.Is(rl.Unlock(held), redlock.ErrNotHeld))
	// Output:
	// <nil>
	// left: false false false
	// true
}

// Unlock returns once a quorum of members released; Drain waits for the
// rest (and any give-back still running), so that nothing of the Lock
// runs on after a program or a test ends.
func ExampleLock_Drain() {
	var members []redlock.Member
	var masters []*miniredis.Miniredis
	for range 3 {
		mr, _ := miniredis.Run()
		defer mr.Close()
		rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
		defer rdb.Close()
		masters = append(masters, mr)
		members = append(members, lock.New(rdb, "job:report"))
	}
	rl := redlock.New(members)
	held, _ := rl.Lock(context.Background())
	_ = rl.Unlock(held)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	fmt.Println(rl.Drain(ctx))
	fmt.Println("left:", masters[0].Exists("job:report"), masters[1].Exists("job:report"), masters[2].Exists("job:report"))
	// Output:
	// <nil>
	// left: false false false
}

// Quorum is len(members)/2+1 for New, every member for NewMulti.
func ExampleLock_Quorum() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()

	var five []redlock.Member
	for range 5 {
		five = append(five, lock.New(rdb, "job")) // one master per member in production
	}
	fmt.Println(redlock.New(five).Quorum(), redlock.NewMulti(five).Quorum())
	// Output: 3 5
}

// Name joins the members' names, as in errors and spans.
func ExampleLock_Name() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()

	transfer := redlock.NewMulti([]redlock.Member{lock.New(rdb, "account:1"), lock.New(rdb, "account:2")})
	fmt.Println(transfer.Name())
	// Output: account:1,account:2 (2 members)
}

// Error names the member (its position, Redis address and lock name) and
// what it answered.
func ExampleNodeError_Error() {
	err := &redlock.NodeError{Index: 1, Node: "10.0.0.2:6379 job:cleanup", Outcome: redlock.OutcomeHeld}
	fmt.Println(err)
	err = &redlock.NodeError{Index: 2, Node: "10.0.0.3:6379 job:cleanup", Outcome: redlock.OutcomeTimeout, Err: context.DeadlineExceeded}
	fmt.Println(err)
	// Output:
	// member 1 (10.0.0.2:6379 job:cleanup): held by another owner
	// member 2 (10.0.0.3:6379 job:cleanup): timeout: context deadline exceeded
}

// Unwrap lets errors.Is and errors.As see through a failed round to each
// member's cause: ErrNotAcquired for a member held by another owner, the
// member's own error otherwise.
func ExampleNodeError_Unwrap() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	ctx := context.Background()

	from, to := lock.New(rdb, "account:1"), lock.New(rdb, "account:2")
	other, _ := to.Lock(ctx) // another owner holds account:2
	_, err := redlock.NewMulti([]redlock.Member{from, to}).TryLock(ctx)

	var ne *redlock.NodeError
	if errors.As(err, &ne) {
		fmt.Println("member", ne.Index, ne.Outcome)
		fmt.Println(errors.Is(ne, redlock.ErrNotAcquired))
	}
	timeout := &redlock.NodeError{Outcome: redlock.OutcomeTimeout, Err: context.DeadlineExceeded}
	fmt.Println(errors.Is(timeout, context.DeadlineExceeded))
	_ = to.Unlock(other)
	// Output:
	// member 1 held by another owner
	// true
	// true
}

// WithDrift sets the clock drift allowance subtracted from the validity
// time. A round is a success only with validity left: here the drift
// allowed is as long as the lease, so no round can succeed.
func ExampleWithDrift() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()

	rl := redlock.New([]redlock.Member{lock.New(rdb, "job")},
		redlock.WithLeaseTime(time.Second), redlock.WithDrift(time.Second))
	_, err := rl.TryLock(context.Background())
	fmt.Println(errors.Is(err, redlock.ErrNotAcquired))
	fmt.Println(strings.Contains(err.Error(), "validity time used up"))
	// Output:
	// true
	// true
}

// WithNodeTimeout bounds each member's attempt, so that a master that does
// not answer costs about that, not the client's own timeouts and retries.
func ExampleWithNodeTimeout() {
	var members []redlock.Member
	var masters []*miniredis.Miniredis
	for range 3 {
		mr, _ := miniredis.Run()
		defer mr.Close()
		rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
		defer rdb.Close()
		masters = append(masters, mr)
		members = append(members, lock.New(rdb, "job"))
	}
	masters[0].Close()

	rl := redlock.New(members, redlock.WithNodeTimeout(50*time.Millisecond))
	start := time.Now()
	held, err := rl.TryLock(context.Background())
	fmt.Println("held with 2 of 3:", err)
	fmt.Println("within a second:", time.Since(start) < time.Second)

	_ = masters[0].Restart() // back before the unlock, which waits for every member
	_ = rl.Unlock(held)
	// Output:
	// held with 2 of 3: <nil>
	// within a second: true
}

// WithLeaseTime gives the hold a fixed lease on every member, no renewal.
func ExampleWithLeaseTime() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()

	both := redlock.NewMulti([]redlock.Member{lock.New(rdb, "a"), lock.New(rdb, "b")},
		redlock.WithLeaseTime(5*time.Second))
	held, _ := both.Lock(context.Background())
	fmt.Println(mr.TTL("a"), mr.TTL("b"))
	_ = both.Unlock(held)
	// Output: 5s 5s
}

// WithWatchdogTimeout sets the lease the watchdog keeps renewing on every
// member.
func ExampleWithWatchdogTimeout() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()

	both := redlock.NewMulti([]redlock.Member{lock.New(rdb, "a"), lock.New(rdb, "b")},
		redlock.WithWatchdogTimeout(9*time.Second))
	held, _ := both.Lock(context.Background())
	fmt.Println(mr.TTL("a"), mr.TTL("b"))
	_ = both.Unlock(held)
	// Output: 9s 9s
}

// WithWaitTimeout bounds how long Lock goes on with new rounds.
func ExampleWithWaitTimeout() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	ctx := context.Background()

	b := lock.New(rdb, "b")
	other, _ := b.Lock(ctx) // another owner holds b
	both := redlock.NewMulti([]redlock.Member{lock.New(rdb, "a"), b},
		redlock.WithWaitTimeout(50*time.Millisecond))
	_, err := both.Lock(ctx)
	fmt.Println(errors.Is(err, redlock.ErrNotAcquired))
	_ = b.Unlock(other)
	// Output: true
}

// WithUnlockTimeout bounds Unlock, which completes even when its context
// is done.
func ExampleWithUnlockTimeout() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()

	both := redlock.NewMulti([]redlock.Member{lock.New(rdb, "a"), lock.New(rdb, "b")},
		redlock.WithUnlockTimeout(time.Second))
	held, _ := both.Lock(context.Background())
	request, cancel := context.WithCancel(held)
	cancel()
	fmt.Println(both.Unlock(request), mr.Exists("a"), mr.Exists("b"))
	// Output: <nil> false false
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

	both := redlock.NewMulti([]redlock.Member{lock.New(rdb, "a"), lock.New(rdb, "b")},
		redlock.WithTracerProvider(tp))
	held, _ := both.Lock(ctx)
	_ = both.Unlock(held)
	for _, s := range rec.Ended() {
		if s.Name() != tracing.SpanAcquireRedlock {
			continue
		}
		for _, a := range s.Attributes() {
			if a.Key == tracing.Nodes || a.Key == tracing.Quorum {
				fmt.Println(s.Name(), a.Key, a.Value.String())
			}
		}
	}
	// Unordered output:
	// acquire redlock redlock.nodes 2
	// acquire redlock redlock.quorum 2
}

// WithWatchdog sets the watchdog that renews every member won; here one
// on a fake clock, so that a renewal (every 10 s of the default 30 s
// lease) happens without waiting.
func ExampleWithWatchdog() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()

	clk := watchdog.NewFakeClock(time.Unix(0, 0))
	wd := watchdog.New(watchdog.WithClock(clk))
	both := redlock.NewMulti([]redlock.Member{lock.New(rdb, "a"), lock.New(rdb, "b")},
		redlock.WithWatchdog(wd))
	held, _ := both.Lock(context.Background())

	for clk.Pending() == 0 { // the watchdog sleeps on the fake clock
		time.Sleep(time.Millisecond)
	}
	clk.Advance(10 * time.Second)
	for wd.Stats().Renewed == 0 {
		time.Sleep(time.Millisecond)
	}
	fmt.Println("renewed, still held:", held.Err() == nil)
	_ = both.Unlock(held)
	// Output: renewed, still held: true
}
