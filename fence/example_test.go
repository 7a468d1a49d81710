package fence_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/fence"
	"github.com/relock-go/relock/lock"
)

// A holder whose lease ran out while it stalled is refused by the key it
// writes, because its successor's token has written since.
func Example() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	ctx := context.Background()
	guard := fence.NewRedis(rdb)

	mu := lock.New(rdb, "ledger", lock.WithLeaseTime(time.Second))
	a, _ := mu.Lock(ctx)
	tokA, _ := lock.FencingToken(a)
	mr.FastForward(2 * time.Second) // A stalls past its lease

	b, _ := lock.New(rdb, "ledger").Lock(ctx)
	tokB, _ := lock.FencingToken(b)
	fmt.Println("B:", guard.Set(ctx, "ledger:balance", tokB, "B's", 0))

	err := guard.Set(ctx, "ledger:balance", tokA, "A's", 0) // A resumes
	fmt.Println("A refused:", errors.Is(err, fence.ErrStale))
	v, _ := rdb.Get(ctx, "ledger:balance").Result()
	fmt.Println("value:", v)
	// Output:
	// B: <nil>
	// A refused: true
	// value: B's
}
