package rwlock_test

import (
	"context"
	"fmt"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/rwlock"
)

// An RWMutex has options of its own: its holder label is
// rwlock.WithHolderLabel (package lock's does not compile here), given to
// New or, as the lease, to one acquisition of either side.
func ExampleLockOption() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	ctx := context.Background()

	rw := rwlock.New(rdb, "catalog", rwlock.WithHolderLabel("indexer"))
	r, err := rw.RLock(ctx, rwlock.WithLeaseTime(10*time.Second), rwlock.WithHolderLabel("reader-1"))
	fmt.Println(err)
	_ = rw.RUnlock(r)
	// Output: <nil>
}
