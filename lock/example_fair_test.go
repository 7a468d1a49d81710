package lock_test

import (
	"context"
	"fmt"
	"sync"
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
	var (
		mu    sync.Mutex // for the race detector: the lock orders the appends
		turns []string
		wg    sync.WaitGroup
	)
	wait := func(rdb *redis.Client, who string) {
		defer wg.Done()
		fair := lock.NewFair(rdb, "tenant:7")
		h, err := fair.Lock(ctx)
		if err != nil {
			fmt.Println(err)
			return
		}
		mu.Lock()
		turns = append(turns, who)
		mu.Unlock()
		_ = fair.Unlock(h)
	}
	wg.Add(2)
	go wait(b, "first")
	for a.LLen(ctx, "redisson_lock_queue:{tenant:7}").Val() < 1 {
		time.Sleep(time.Millisecond)
	}
	go wait(c, "second")
	for a.LLen(ctx, "redisson_lock_queue:{tenant:7}").Val() < 2 {
		time.Sleep(time.Millisecond)
	}
	_ = lock.NewFair(a, "tenant:7").Unlock(held)
	wg.Wait()
	fmt.Println(turns)
	// Output: [first second]
}
