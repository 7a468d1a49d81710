package semaphore_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/semaphore"
)

// TTL is how long the permits of a hold last unless renewed, as Redis
// counts them.
func ExampleSemaphore_TTL() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	ctx := context.Background()

	sem := semaphore.New(rdb, "workers", 4)
	held, _ := sem.Acquire(ctx, 2)
	ttl, _ := sem.TTL(held)
	fmt.Println(ttl > 0)
	_ = sem.Release(held)
	// Output: true
}

// ForceRelease frees every permit, whoever holds them (an operator's
// action); the holders' contexts end with ErrLockLost.
func ExampleSemaphore_ForceRelease() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	ctx := context.Background()

	sem := semaphore.New(rdb, "workers", 4)
	held, _ := sem.Acquire(ctx, 3)
	ok, _ := sem.ForceRelease(ctx)
	<-held.Done()
	free, _ := sem.Available(ctx)
	fmt.Println(ok, errors.Is(context.Cause(held), semaphore.ErrLockLost), free)
	// Output: true true 4
}

// Extend gives the permits of a fixed lease more time.
func ExampleSemaphore_Extend() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()

	sem := semaphore.New(rdb, "workers", 4, semaphore.WithLeaseTime(10*time.Second))
	held, _ := sem.Acquire(context.Background(), 1)
	defer func() { _ = sem.Release(held) }()
	err := sem.Extend(held, time.Minute)
	ttl, _ := sem.TTL(held)
	fmt.Println(err, ttl > 50*time.Second)
	// Output: <nil> true
}

// During a rolling deploy that raises the size from 2 to 4, the new
// processes use the size Redis records (2) while the old ones hold
// permits, instead of failing with ErrSizeMismatch.
func ExampleWithRecordedSize() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	ctx := context.Background()

	old := semaphore.New(rdb, "exports", 2)
	held, _ := old.Acquire(ctx, 1)
	upgraded := semaphore.New(rdb, "exports", 4, semaphore.WithRecordedSize())
	free, err := upgraded.Available(ctx)
	fmt.Println(free, err)
	_ = old.Release(held)
	// Output: 1 <nil>
}
