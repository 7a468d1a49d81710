package rwlock_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/rwlock"
)

// A writer's label names it to a contender that finds the lock taken.
func ExampleWithHolderLabel() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	ctx := context.Background()

	rw := rwlock.New(rdb, "catalog", rwlock.WithHolderLabel("pod-7"))
	held, _ := rw.Lock(ctx)
	_, err := rwlock.New(rdb, "catalog", rwlock.WithHolderLabel("pod-8")).TryRLock(ctx)
	fmt.Println(strings.Contains(err.Error(), "held by pod-7 for"))
	_ = rw.Unlock(held)
	// Output: true
}
