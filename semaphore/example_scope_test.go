package semaphore_test

import (
	"context"
	"fmt"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/semaphore"
)

// Do holds n permits while the function runs and gives them back on every
// path.
func ExampleSemaphore_Do() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	ctx := context.Background()

	exports := semaphore.New(rdb, "exports", 4)
	err := exports.Do(ctx, 3, func(held context.Context) error {
		n, _ := exports.Available(held)
		fmt.Println("available inside:", n)
		return nil
	})
	n, _ := exports.Available(ctx)
	fmt.Println(err, "available after:", n)
	// Output:
	// available inside: 1
	// <nil> available after: 4
}

// WithHoldScopedToContext: see lock.WithHoldScopedToContext.
func ExampleWithHoldScopedToContext() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()

	exports := semaphore.New(rdb, "exports", 4, semaphore.WithHoldScopedToContext())
	request, cancel := context.WithCancel(context.Background())
	held, _ := exports.Acquire(request, 1)
	cancel()
	<-held.Done()
	fmt.Println(context.Cause(held), exports.Release(held))
	// Output:
	// context canceled: the hold of semaphore "exports" ended with its acquiring context (context canceled) <nil>
}

// Remaining: see lock.Remaining.
func ExampleRemaining() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()

	exports := semaphore.New(rdb, "exports", 4, semaphore.WithLeaseTime(10*time.Second))
	_ = exports.Do(context.Background(), 1, func(held context.Context) error {
		left, ok := semaphore.Remaining(held)
		fmt.Println(ok, left > 9*time.Second)
		return nil
	})
	// Output: true true
}
