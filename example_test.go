package relock_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock"
	"github.com/relock-go/relock/lock"
)

// Every error a primitive returns is an *Error naming the operation and
// the lock, and wraps a sentinel that errors.Is finds.
func Example() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	ctx := context.Background()

	mu := lock.New(rdb, "order:1")
	held, _ := mu.Lock(ctx)
	defer func() { _ = mu.Unlock(held) }()

	_, err := mu.TryLock(ctx) // another owner: ctx carries no hold
	var e *relock.Error
	fmt.Println(errors.As(err, &e), e.Op, e.Primitive, e.Name)
	fmt.Println(errors.Is(err, relock.ErrNotAcquired), errors.Is(err, lock.ErrNotAcquired))
	// Output:
	// true trylock lock order:1
	// true true
}

// Error reads as the operation, the primitive, the lock and the reason.
func ExampleError_Error() {
	err := &relock.Error{Op: "unlock", Primitive: "semaphore", Name: "pool", Err: relock.ErrNotHeld}
	fmt.Println(err)
	// Output: relock: unlock semaphore "pool": not held
}

// Unwrap returns the reason.
func ExampleError_Unwrap() {
	err := &relock.Error{Op: "lock", Primitive: "lock", Name: "a", Err: relock.ErrLockLost}
	fmt.Println(err.Unwrap() == relock.ErrLockLost)
	// Output: true
}
