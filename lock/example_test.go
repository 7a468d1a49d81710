package lock_test

import (
	"context"
	"fmt"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/lock"
)

func Example() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	ctx := context.Background()

	mu := lock.New(rdb, "order:1")
	held, err := mu.Lock(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	inner, _ := mu.Lock(held) // the same owner re-enters
	n, _ := mu.HoldCount(inner)
	fmt.Println("hold count:", n)

	_, err = mu.TryLock(ctx) // another owner
	fmt.Println(err)

	_ = mu.Unlock(inner)
	_ = mu.Unlock(held)
	locked, _ := mu.IsLocked(ctx)
	fmt.Println("locked:", locked)
	// Output:
	// hold count: 2
	// relock: trylock lock "order:1": not acquired
	// locked: false
}
