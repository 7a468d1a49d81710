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

// Options of the Mutex go to New; one acquisition takes the LockOptions
// (its lease, wait bound, holder label, ...) over them. What configures
// the Mutex itself is an Option only: mu.Lock(ctx,
// lock.WithUnlockTimeout(time.Second)) does not compile, nor does an
// option of another package (mu.Lock(ctx, rwlock.WithWaitTimeout(d))).
func ExampleLockOption() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	ctx := context.Background()

	mu := lock.New(rdb, "invoice:7", lock.WithUnlockTimeout(2*time.Second), lock.WithHolderLabel("billing"))
	held, err := mu.Lock(ctx, lock.WithLeaseTime(10*time.Second))
	fmt.Println(err)

	_, err = mu.Lock(lock.NewOwner(ctx), lock.WithWaitTimeout(50*time.Millisecond), lock.WithHolderLabel("audit"))
	fmt.Println(errors.Is(err, lock.ErrNotAcquired))
	_ = mu.Unlock(held)
	// Output:
	// <nil>
	// true
}
