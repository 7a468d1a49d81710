package lock_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
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

// New only describes the lock; nothing reaches Redis until the first
// call. A bad argument is reported by that call, before anything is
// written.
func ExampleNew() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	ctx := context.Background()

	mu := lock.New(rdb, "order:1")
	fmt.Println(mu.Name(), mr.Exists("order:1"))

	_, err := lock.New(rdb, "").TryLock(ctx)
	fmt.Println(errors.Is(err, lock.ErrInvalidArgument))
	// Output:
	// order:1 false
	// true
}

// Lock waits while another owner holds the lock. Each goroutine starts
// from its own context, so they are two owners: the second one waits for
// the first one's Unlock (woken by pub/sub, not by polling).
func ExampleMutex_Lock() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	ctx := context.Background()

	mu := lock.New(rdb, "invoice:7")
	held, err := mu.Lock(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}

	done := make(chan struct{})
	go func() {
		defer close(done)
		next, err := mu.Lock(context.Background()) // waits for the unlock below
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println("second owner: printing invoice")
		_ = mu.Unlock(next)
	}()

	fmt.Println("first owner: writing invoice")
	_ = mu.Unlock(held)
	<-done
	fmt.Println("hold ended:", context.Cause(held))
	// Output:
	// first owner: writing invoice
	// second owner: printing invoice
	// hold ended: context canceled
}

// TryLock makes one attempt and never waits: for work that someone else
// doing is as good as doing it yourself, such as a cache refresh.
func ExampleMutex_TryLock() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	ctx := context.Background()

	refresh := lock.New(rdb, "cache:refresh")
	held, err := refresh.TryLock(ctx)
	fmt.Println("first:", err)

	_, err = refresh.TryLock(ctx) // another owner: skip, the refresh is under way
	fmt.Println("second:", errors.Is(err, lock.ErrNotAcquired))

	_ = refresh.Unlock(held)
	// Output:
	// first: <nil>
	// second: true
}

// Unlock takes back one count of the hold that returned its context. A
// second Unlock of the same hold is ErrNotHeld, and does not touch Redis.
func ExampleMutex_Unlock() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	ctx := context.Background()

	mu := lock.New(rdb, "order:1")
	held, _ := mu.Lock(ctx)
	inner, _ := mu.Lock(held) // re-entered: count 2

	fmt.Println(mu.Unlock(inner))
	locked, _ := mu.IsLocked(ctx)
	fmt.Println("still locked:", locked)

	fmt.Println(mu.Unlock(held))
	locked, _ = mu.IsLocked(ctx)
	fmt.Println("still locked:", locked)

	err := mu.Unlock(held)
	fmt.Println(errors.Is(err, lock.ErrNotHeld))
	// Output:
	// <nil>
	// still locked: true
	// <nil>
	// still locked: false
	// true
}

// ForceUnlock is the operator's tool for a lock left by a process that
// cannot release it. The holder's own Unlock then reports the hold lost.
func ExampleMutex_ForceUnlock() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	ctx := context.Background()

	mu := lock.New(rdb, "nightly-export")
	held, _ := mu.Lock(ctx)

	removed, err := mu.ForceUnlock(ctx)
	fmt.Println("removed:", removed, err)
	removed, _ = mu.ForceUnlock(ctx)
	fmt.Println("removed again:", removed)

	err = mu.Unlock(held)
	fmt.Println("holder's unlock:", errors.Is(err, lock.ErrLockLost))
	// Output:
	// removed: true <nil>
	// removed again: false
	// holder's unlock: true
}

// HoldCount counts the re-entries of the context's owner; another owner
// sees 0.
func ExampleMutex_HoldCount() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	ctx := context.Background()

	mu := lock.New(rdb, "account:9")
	outer, _ := mu.Lock(ctx)
	inner, _ := mu.Lock(outer) // a nested call re-enters
	n, _ := mu.HoldCount(inner)
	fmt.Println("owner:", n)
	n, _ = mu.HoldCount(ctx)
	fmt.Println("another owner:", n)

	_ = mu.Unlock(inner)
	n, _ = mu.HoldCount(outer)
	fmt.Println("after one unlock:", n)
	_ = mu.Unlock(outer)
	// Output:
	// owner: 2
	// another owner: 0
	// after one unlock: 1
}

// IsLocked tells whether anyone holds the lock, for monitoring; to act on
// the answer, use TryLock instead (the answer may change at once).
func ExampleMutex_IsLocked() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	ctx := context.Background()

	mu := lock.New(rdb, "deploy")
	locked, _ := mu.IsLocked(ctx)
	fmt.Println(locked)
	held, _ := mu.Lock(ctx)
	locked, _ = mu.IsLocked(ctx)
	fmt.Println(locked)
	_ = mu.Unlock(held)
	// Output:
	// false
	// true
}

// Name is the Redis key of the lock's hash, as Redisson names it too.
func ExampleMutex_Name() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()

	mu := lock.New(rdb, "order:1")
	held, _ := mu.Lock(context.Background())
	fmt.Println(mu.Name(), mr.Exists(mu.Name()))
	_ = mu.Unlock(held)
	// Output: order:1 true
}

// A *Mutex is a redlock.Member: here two accounts locked together, all
// or nothing. A member with bad arguments makes the Redlock refuse.
func Example_redlockMember() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	ctx := context.Background()

	from, to := lock.New(rdb, "account:1"), lock.New(rdb, "account:2")
	var _ redlock.Member = from // *lock.Mutex is a member
	both := redlock.NewMulti([]redlock.Member{from, to})
	held, err := both.Lock(ctx)
	fmt.Println(err, mr.Exists("account:1"), mr.Exists("account:2"))
	_ = both.Unlock(held)

	_, err = redlock.New([]redlock.Member{lock.New(rdb, "")}).Lock(ctx) // an invalid Mutex is refused
	fmt.Println(errors.Is(err, lock.ErrInvalidArgument))
	// Output:
	// <nil> true true
	// true
}

// TTL is how long the hold lasts unless renewed: the watchdog's 30 s by
// default, renewed every 10 s while held.
func ExampleMutex_TTL() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	ctx := context.Background()

	mu := lock.New(rdb, "order:1")
	ttl, _ := mu.TTL(ctx)
	fmt.Println("free:", ttl)
	held, _ := mu.Lock(ctx)
	ttl, _ = mu.TTL(ctx)
	fmt.Println("held:", ttl.Round(time.Second))
	_ = mu.Unlock(held)
	// Output:
	// free: 0s
	// held: 30s
}

// FencingToken grows with every acquisition. A store that remembers the
// largest token it has seen refuses a write from a holder that has since
// lost the lock (paused past its lease, say) while another took it.
func ExampleFencingToken() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	ctx := context.Background()

	var highest int64 // the store's side: the largest token written
	write := func(token int64, what string) {
		if token < highest {
			fmt.Println("refused", what, "with a stale token")
			return
		}
		highest = token
		fmt.Println("wrote", what)
	}

	mu := lock.New(rdb, "ledger")
	first, _ := mu.Lock(ctx)
	slowToken, _ := lock.FencingToken(first)
	_ = mu.Unlock(first) // stands in for a lease lost during a pause

	second, _ := mu.Lock(ctx)
	token, _ := lock.FencingToken(second)
	write(token, "balance=20")
	write(slowToken, "balance=10") // the paused holder wakes up late
	_ = mu.Unlock(second)

	_, ok := lock.FencingToken(ctx) // no hold in ctx
	fmt.Println(ok)
	// Output:
	// wrote balance=20
	// refused balance=10 with a stale token
	// false
}

// WithLeaseTime gives a fixed lease with no renewal: the lock frees itself
// after it even if Unlock never comes, and the holder's context ends with
// ErrLockLost then. A fake clock and miniredis's FastForward let the lease
// pass here without waiting.
func ExampleWithLeaseTime() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	ctx := context.Background()

	clk := watchdog.NewFakeClock(time.Unix(0, 0))
	mu := lock.New(rdb, "report", lock.WithLeaseTime(5*time.Second),
		lock.WithWatchdog(watchdog.New(watchdog.WithClock(clk))))
	held, _ := mu.Lock(ctx)
	ttl, _ := mu.TTL(ctx)
	fmt.Println("ttl:", ttl.Round(time.Second))

	for clk.Pending() == 0 { // the watchdog sleeps on the fake clock
		time.Sleep(time.Millisecond)
	}
	clk.Advance(5 * time.Second)
	mr.FastForward(5 * time.Second)
	<-held.Done()
	fmt.Println(errors.Is(context.Cause(held), lock.ErrLockLost))
	locked, _ := mu.IsLocked(ctx)
	fmt.Println("locked:", locked)
	// Output:
	// ttl: 5s
	// true
	// locked: false
}

// WithWaitTimeout bounds the wait of Lock alone: after it, ErrNotAcquired.
// (A deadline on ctx would bound the hold too.)
func ExampleWithWaitTimeout() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	ctx := context.Background()

	mu := lock.New(rdb, "order:1", lock.WithWaitTimeout(50*time.Millisecond))
	held, _ := mu.Lock(ctx)

	_, err := mu.Lock(context.Background()) // another owner gives up after 50 ms
	fmt.Println(errors.Is(err, lock.ErrNotAcquired))
	_ = mu.Unlock(held)
	// Output: true
}

// WithUnlockTimeout bounds the round trip of Unlock, which does not use
// its context's deadline: the context may be done already (a request that
// timed out) and the lock must still be released.
func ExampleWithUnlockTimeout() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	ctx := context.Background()

	mu := lock.New(rdb, "order:1", lock.WithUnlockTimeout(time.Second))
	held, _ := mu.Lock(ctx)
	request, cancel := context.WithCancel(held)
	cancel() // the request derived from the hold is over

	fmt.Println(mu.Unlock(request))
	locked, _ := mu.IsLocked(ctx)
	fmt.Println("locked:", locked)
	// Output:
	// <nil>
	// locked: false
}

// WithTracerProvider sends the span of each acquire to tp instead of the
// global OpenTelemetry provider.
func ExampleWithTracerProvider() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	ctx := context.Background()

	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer func() { _ = tp.Shutdown(ctx) }()

	mu := lock.New(rdb, "order:1", lock.WithTracerProvider(tp))
	held, _ := mu.Lock(ctx)
	_ = mu.Unlock(held)
	for _, s := range rec.Ended() {
		if s.Name() != tracing.SpanAcquireLock {
			continue
		}
		for _, a := range s.Attributes() {
			if a.Key == tracing.LockName || a.Key == tracing.Outcome {
				fmt.Println(s.Name(), a.Key, a.Value.AsString())
			}
		}
	}
	// Output:
	// acquire lock lock.name order:1
	// acquire lock lock.outcome acquired
}

// WithWatchdog sets the watchdog that renews the lease, here a private
// one (tests give one a fake clock); by default every primitive shares
// watchdog.Default().
func ExampleWithWatchdog() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	ctx := context.Background()

	wd := watchdog.New()
	mu := lock.New(rdb, "order:1", lock.WithWatchdog(wd))
	held, _ := mu.Lock(ctx)
	fmt.Println("leases kept:", wd.Stats().Held)
	_ = mu.Unlock(held)
	fmt.Println("leases kept:", wd.Stats().Held)
	// Output:
	// leases kept: 1
	// leases kept: 0
}

// WithWatchdogTimeout sets the renewed lease: how long a crashed holder
// keeps others out. The watchdog renews it every third of it.
func ExampleWithWatchdogTimeout() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	ctx := context.Background()

	mu := lock.New(rdb, "order:1", lock.WithWatchdogTimeout(9*time.Second))
	held, _ := mu.Lock(ctx)
	ttl, _ := mu.TTL(ctx)
	fmt.Println(ttl.Round(time.Second))
	_ = mu.Unlock(held)
	// Output: 9s
}

// Extend gives a fixed lease more time when the work runs long; a
// watchdog hold needs none (it is renewed while held).
func ExampleMutex_Extend() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()

	mu := lock.New(rdb, "report", lock.WithLeaseTime(10*time.Second))
	held, _ := mu.Lock(context.Background())
	defer func() { _ = mu.Unlock(held) }()
	fmt.Println(mu.Extend(held, time.Minute), mr.TTL("report"))
	// Output: <nil> 1m0s
}

// Lock's options are this acquisition's own: here a fixed 5 s lease and a
// 100 ms wait bound for one call, on a Mutex whose holds the watchdog
// otherwise renews.
func ExampleMutex_Lock_perCall() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	ctx := context.Background()

	mu := lock.New(rdb, "report")
	held, err := mu.Lock(ctx, lock.WithLeaseTime(5*time.Second), lock.WithWaitTimeout(100*time.Millisecond))
	fmt.Println(err, mr.TTL("report"))
	_ = mu.Unlock(held)
	// Output: <nil> 5s
}

// WithHolderLabel names the holder beside its hold; a labeled contender
// is told who holds the lock and since when.
func ExampleWithHolderLabel() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	ctx := context.Background()

	held, _ := lock.New(rdb, "report", lock.WithHolderLabel("pod-7")).Lock(ctx)
	_, err := lock.New(rdb, "report", lock.WithHolderLabel("pod-8")).TryLock(ctx)
	fmt.Println(strings.Contains(err.Error(), "held by pod-7 for"))
	_ = lock.New(rdb, "report").Unlock(held)
	// Output: true
}

// WithForceUnlockNotice ends a hold at once when another process
// force-unlocks it (here another client, as `relock unlock --force` is).
func ExampleWithForceUnlockNotice() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	operator := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer operator.Close()
	ctx := context.Background()

	mu := lock.New(rdb, "report", lock.WithForceUnlockNotice())
	held, _ := mu.Lock(ctx)
	_, _ = lock.New(operator, "report").ForceUnlock(ctx)
	<-held.Done() // at once, not at the next renewal
	fmt.Println(errors.Is(context.Cause(held), lock.ErrLockLost))
	// Output: true
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
	held, err := lock.New(rdb, "jobs", lock.WithLogger(logger)).TryLock(ctx)
	fmt.Println(err)
	_ = lock.New(rdb, "jobs").Unlock(held)
	_, err = lock.New(rdb, "jobs", lock.WithLogger(nil)).TryLock(ctx)
	fmt.Println(errors.Is(err, lock.ErrInvalidArgument))
	// Output:
	// <nil>
	// true
}

// Err reports a bad argument at start-up, before any call.
func ExampleMutex_Err() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()

	fmt.Println(lock.New(rdb, "order:1").Err())
	err := lock.New(rdb, "order:1", lock.WithLeaseTime(time.Millisecond)).Err()
	fmt.Println(errors.Is(err, lock.ErrInvalidArgument))
	// Output:
	// <nil>
	// true
}
