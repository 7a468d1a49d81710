package semaphore_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/semaphore"
)

func Example() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	ctx := context.Background()

	workers := semaphore.New(rdb, "workers", 3)
	held, err := workers.Acquire(ctx, 2) // 2 of 3 permits
	if err != nil {
		fmt.Println(err)
		return
	}
	free, _ := workers.Available(ctx)
	fmt.Println("available:", free)

	_, err = workers.TryAcquire(ctx, 2) // only 1 is free
	fmt.Println(err)

	// Another process that believes in another size is told at once
	// (Redis records the size while permits are held or wanted).
	_, err = semaphore.New(rdb, "workers", 5).Acquire(ctx, 1)
	fmt.Println(errors.Is(err, semaphore.ErrSizeMismatch))
	fmt.Println(err)

	_ = workers.Release(held) // gives back exactly those 2
	free, _ = workers.Available(ctx)
	fmt.Println("available:", free)
	// Output:
	// available: 1
	// relock: tryacquire semaphore "workers": not acquired
	// true
	// relock: acquire semaphore "workers": semaphore size mismatch: Redis records size 3, this Semaphore was built with 5
	// available: 3
}
