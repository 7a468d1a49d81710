package rwlock_test

import (
	"context"
	"fmt"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/rwlock"
)

// IsLocked reports whether anyone holds the lock, reading or writing.
func ExampleRWMutex_IsLocked() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	ctx := context.Background()

	rw := rwlock.New(rdb, "catalog")
	before, _ := rw.IsLocked(ctx)
	held, _ := rw.RLock(ctx)
	during, _ := rw.IsLocked(ctx)
	_ = rw.RUnlock(held)
	fmt.Println(before, during)
	// Output: false true
}

// HoldCount tells the read and write counts of the hold a context
// carries: here a write hold with a read taken inside it.
func ExampleRWMutex_HoldCount() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	ctx := context.Background()

	rw := rwlock.New(rdb, "catalog")
	w, _ := rw.Lock(ctx)
	r, _ := rw.RLock(w) // write-then-read by the same owner
	reads, writes, _ := rw.HoldCount(r)
	fmt.Println(reads, writes)
	_ = rw.RUnlock(r)
	_ = rw.Unlock(w)
	// Output: 1 1
}

// TTL is how long the lock lasts unless renewed: the watchdog's 30 s by
// default.
func ExampleRWMutex_TTL() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	ctx := context.Background()

	rw := rwlock.New(rdb, "catalog")
	held, _ := rw.RLock(ctx)
	ttl, _ := rw.TTL(ctx)
	fmt.Println(ttl)
	_ = rw.RUnlock(held)
	// Output: 30s
}

// ForceUnlock frees the lock whoever holds it (an operator's action); the
// holder's context ends with ErrLockLost.
func ExampleRWMutex_ForceUnlock() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	ctx := context.Background()

	rw := rwlock.New(rdb, "catalog")
	held, _ := rw.RLock(ctx)
	ok, err := rw.ForceUnlock(ctx)
	<-held.Done()
	fmt.Println(ok, err, context.Cause(held) != nil, mr.Exists("catalog"))
	// Output: true <nil> true false
}

// Extend gives a fixed read or write lease more time.
func ExampleRWMutex_Extend() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()

	rw := rwlock.New(rdb, "catalog", rwlock.WithLeaseTime(10*time.Second))
	held, _ := rw.Lock(context.Background())
	defer func() { _ = rw.Unlock(held) }()
	fmt.Println(rw.Extend(held, time.Minute), mr.TTL("catalog"))
	// Output: <nil> 1m0s
}
