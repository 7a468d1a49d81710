package rwlock_test

import (
	"context"
	"fmt"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/rwlock"
)

// Read and write locks wait for the replicas as a lock does (none here).
func ExampleWithReplicaSync() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()

	rw := rwlock.New(rdb, "catalog", rwlock.WithReplicaSync(500*time.Millisecond))
	held, err := rw.RLock(context.Background())
	fmt.Println(err)
	_ = rw.RUnlock(held)
	// Output: <nil>
}

// WithMinReplicas sets how many replicas must acknowledge.
func ExampleWithMinReplicas() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()

	rw := rwlock.New(rdb, "catalog", rwlock.WithMinReplicas(2))
	held, err := rw.Lock(context.Background())
	fmt.Println(err)
	_ = rw.Unlock(held)
	// Output: <nil>
}
