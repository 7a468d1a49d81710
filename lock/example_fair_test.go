package lock_test

import (
	"context"
	"fmt"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/lock"
)

// A fair lock serves its waiters in the order they came, across
// processes: here two clients queue behind a holder, and take the lock in
// turn.
func ExampleNewFair() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	ctx := context.Background()
	client := func() *redis.Client { return redis.NewClient(&redis.Options{Addr: mr.Addr()}) }
	a, b, c := client(), client(), client()
	defer a.Close()
	defer b.Close()
	defer c.Close()

	held, _ := lock.NewFair(a, "tenant:7").Lock(ctx)
	turns := make(chan string, 2)
	wait := func(rdb *redis.Client, who string) {
		mu := lock.NewFair(rdb, "tenant:7")
		h, err := mu.Lock(ctx)
		if err != nil {
			turns <- err.Error()
			return
		}
		turns <- who
		_ = mu.Unlock(h)
	}
	go wait(b, "first")
	for a.LLen(ctx, "redisson_lock_queue:{tenant:7}").Val() < 1 {
		time.Sleep(time.Millisecond)
	}
	go wait(c, "second")
	for a.LLen(ctx, "redisson_lock_queue:{tenant:7}").Val() < 2 {
		time.Sleep(time.Millisecond)
	}
	_ = lock.NewFair(a, "tenant:7").Unlock(held)
	fmt.Println(<-turns, <-turns)
	// Output: first second
}
