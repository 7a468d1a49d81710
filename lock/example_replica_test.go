package lock_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/lock"
)

// WithReplicaSync bounds the wait for a server's replicas to acknowledge
// an acquisition; too few acknowledgements make it ErrNotReplicated, a
// kind of ErrNotAcquired. miniredis has no replicas: nothing is waited
// for, and the lock is taken at once.
func ExampleWithReplicaSync() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()

	mu := lock.New(rdb, "report", lock.WithReplicaSync(250*time.Millisecond))
	held, err := mu.TryLock(context.Background())
	switch {
	case errors.Is(err, lock.ErrNotReplicated):
		fmt.Println("taken, but the replicas did not confirm it: given back")
	case err != nil:
		fmt.Println(err)
	default:
		fmt.Println("held")
		_ = mu.Unlock(held)
	}
	// Output: held
}

// WithMinReplicas asks for more acknowledgements than one. Like
// WithReplicaSync it configures the Mutex: it is an Option, not a
// LockOption, so one acquisition cannot take it (mu.Lock(ctx,
// lock.WithMinReplicas(1)) does not compile).
func ExampleWithMinReplicas() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	ctx := context.Background()

	mu := lock.New(rdb, "ledger", lock.WithMinReplicas(2))
	held, err := mu.Lock(ctx)
	fmt.Println(err)
	_ = mu.Unlock(held)
	// Output: <nil>
}
