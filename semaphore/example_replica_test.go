package semaphore_test

import (
	"context"
	"fmt"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/semaphore"
)

// Permits wait for the replicas as a lock does (none here).
func ExampleWithReplicaSync() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()

	sem := semaphore.New(rdb, "pool", 4, semaphore.WithReplicaSync(500*time.Millisecond))
	held, err := sem.Acquire(context.Background(), 2)
	fmt.Println(err)
	_ = sem.Release(held)
	// Output: <nil>
}

// WithMinReplicas sets how many replicas must acknowledge.
func ExampleWithMinReplicas() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()

	sem := semaphore.New(rdb, "pool", 4, semaphore.WithMinReplicas(2))
	held, err := sem.Acquire(context.Background(), 1)
	fmt.Println(err)
	_ = sem.Release(held)
	// Output: <nil>
}
