package semaphore_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/semaphore"
)

// A permit's label names its holder to a contender that finds no permit
// left.
func ExampleWithHolderLabel() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	ctx := context.Background()

	sem := semaphore.New(rdb, "exports", 1, semaphore.WithHolderLabel("pod-7"))
	held, _ := sem.Acquire(ctx, 1)
	_, err := semaphore.New(rdb, "exports", 1, semaphore.WithHolderLabel("pod-8")).TryAcquire(ctx, 1)
	fmt.Println(strings.Contains(err.Error(), "held by pod-7 for"))
	_ = sem.Release(held)
	// Output: true
}
