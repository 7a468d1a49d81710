package semaphore_test

import (
	"context"
	"fmt"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/semaphore"
)

// A Semaphore has options of its own: New takes Options, one Acquire its
// AcquireOptions (the lease, the wait bound, the holder label, ...).
// semaphore.WithRecordedSize configures the Semaphore, so Acquire does not
// compile with it.
func ExampleAcquireOption() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	ctx := context.Background()

	s := semaphore.New(rdb, "exports", 3, semaphore.WithRecordedSize())
	held, err := s.Acquire(ctx, 2, semaphore.WithHolderLabel("export-job"), semaphore.WithWaitTimeout(time.Second))
	fmt.Println(err)
	_ = s.Release(held)
	// Output: <nil>
}
