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

// TTL is the validity a quorum of the members still gives the lock.
func ExampleLock_TTL() {
	var members []redlock.Member
	for range 3 {
		mr, _ := miniredis.Run()
		defer mr.Close()
		rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
		defer rdb.Close()
		members = append(members, lock.New(rdb, "report"))
	}
	rl := redlock.New(members, redlock.WithLeaseTime(10*time.Second))
	ctx := context.Background()
	held, _ := rl.Lock(ctx)
	ttl, _ := rl.TTL(ctx)
	fmt.Println(ttl > 9*time.Second && ttl <= 10*time.Second)
	_ = rl.Unlock(held)
	// Output: true
}

// Extend gives a fixed lease more time on every member.
func ExampleLock_Extend() {
	var members []redlock.Member
	for range 3 {
		mr, _ := miniredis.Run()
		defer mr.Close()
		rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
		defer rdb.Close()
		members = append(members, lock.New(rdb, "report"))
	}
	rl := redlock.New(members, redlock.WithLeaseTime(10*time.Second))
	held, _ := rl.Lock(context.Background())
	defer func() { _ = rl.Unlock(held) }()
	err := rl.Extend(held, time.Minute)
	left, _ := redlock.Remaining(held)
	fmt.Println(err, left > 50*time.Second)
	// Output: <nil> true
}
