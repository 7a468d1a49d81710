package rwlock_test

import (
	"context"
	"fmt"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/rwlock"
)

// RDo reads under the read lock and read-unlocks on every path.
func ExampleRWMutex_RDo() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()

	rw := rwlock.New(rdb, "catalog")
	err := rw.RDo(context.Background(), func(held context.Context) error {
		fmt.Println("reading, mode:", mr.HGet("catalog", "mode"))
		return nil
	})
	fmt.Println(err, mr.Exists("catalog"))
	// Output:
	// reading, mode: read
	// <nil> false
}

// Do writes under the write lock and unlocks on every path; a nested
// RLock through the write hold re-enters (the writer may read).
func ExampleRWMutex_Do() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()

	rw := rwlock.New(rdb, "catalog")
	err := rw.Do(context.Background(), func(held context.Context) error {
		fmt.Println("writing, mode:", mr.HGet("catalog", "mode"))
		return rw.RDo(held, func(context.Context) error { return nil })
	})
	fmt.Println(err, mr.Exists("catalog"))
	// Output:
	// writing, mode: write
	// <nil> false
}

// WithHoldScopedToContext: see lock.WithHoldScopedToContext.
func ExampleWithHoldScopedToContext() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()

	rw := rwlock.New(rdb, "catalog", rwlock.WithHoldScopedToContext())
	request, cancel := context.WithCancel(context.Background())
	held, _ := rw.RLock(request)
	cancel()
	<-held.Done()
	fmt.Println(context.Cause(held), rw.RUnlock(held))
	// Output:
	// context canceled: the hold of rlock "catalog" ended with its acquiring context (context canceled) <nil>
}

// FencingToken: see lock.Mutex.FencingToken.
func ExampleRWMutex_FencingToken() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()

	catalog := rwlock.New(rdb, "catalog")
	_ = catalog.Do(context.Background(), func(held context.Context) error {
		tok, ok := catalog.FencingToken(held)
		fmt.Println(tok > 0, ok)
		_, ok = rwlock.New(rdb, "other").FencingToken(held)
		fmt.Println(ok)
		return nil
	})
	// Output:
	// true true
	// false
}

// Remaining: see lock.Remaining.
func ExampleRemaining() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()

	rw := rwlock.New(rdb, "catalog", rwlock.WithLeaseTime(10*time.Second))
	_ = rw.RDo(context.Background(), func(held context.Context) error {
		left, ok := rwlock.Remaining(held)
		fmt.Println(ok, left > 9*time.Second)
		return nil
	})
	// Output: true true
}
