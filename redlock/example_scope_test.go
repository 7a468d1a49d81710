package redlock_test

import (
	"context"
	"fmt"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/lock"
	"github.com/relock-go/relock/redlock"
)

// Do holds the Redlock while the function runs and unlocks on every path.
func ExampleLock_Do() {
	var members []redlock.Member
	for range 3 {
		mr, _ := miniredis.Run()
		defer mr.Close()
		rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
		defer rdb.Close()
		members = append(members, lock.New(rdb, "job:nightly"))
	}
	rl := redlock.New(members)
	err := rl.Do(context.Background(), func(held context.Context) error {
		fmt.Println("running the nightly job:", held.Err())
		return nil
	})
	fmt.Println(err, rl.Drain(context.Background()))
	// Output:
	// running the nightly job: <nil>
	// <nil> <nil>
}

// WithHoldScopedToContext: see lock.WithHoldScopedToContext.
func ExampleWithHoldScopedToContext() {
	var members []redlock.Member
	for range 3 {
		mr, _ := miniredis.Run()
		defer mr.Close()
		rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
		defer rdb.Close()
		members = append(members, lock.New(rdb, "job:nightly"))
	}
	rl := redlock.New(members, redlock.WithHoldScopedToContext())
	request, cancel := context.WithCancel(context.Background())
	held, _ := rl.Lock(request)
	cancel()
	<-held.Done()
	fmt.Println(context.Cause(held))
	_ = rl.Drain(context.Background())
	// Output:
	// context canceled: the hold of redlock "job:nightly (3 members)" ended with its acquiring context (context canceled)
}

// FencingToken: see lock.Mutex.FencingToken (a Redlock's token is
// advisory: see the package documentation).
func ExampleLock_FencingToken() {
	var members []redlock.Member
	for range 3 {
		mr, _ := miniredis.Run()
		defer mr.Close()
		rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
		defer rdb.Close()
		members = append(members, lock.New(rdb, "job:nightly"))
	}
	rl := redlock.New(members)
	_ = rl.Do(context.Background(), func(held context.Context) error {
		tok, ok := rl.FencingToken(held)
		fmt.Println(tok > 0, ok)
		return nil
	})
	_ = rl.Drain(context.Background())
	// Output: true true
}

// Remaining: the validity the hold has left, renewed by the watchdog.
func ExampleRemaining() {
	var members []redlock.Member
	for range 3 {
		mr, _ := miniredis.Run()
		defer mr.Close()
		rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
		defer rdb.Close()
		members = append(members, lock.New(rdb, "job:nightly"))
	}
	rl := redlock.New(members, redlock.WithLeaseTime(10*time.Second))
	_ = rl.Do(context.Background(), func(held context.Context) error {
		left, ok := redlock.Remaining(held)
		fmt.Println(ok, left > 9*time.Second, left <= 10*time.Second)
		return nil
	})
	_ = rl.Drain(context.Background())
	// Output: true true true
}
