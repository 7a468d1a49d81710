package inspect_test

import (
	"context"
	"fmt"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/cmd/relock/internal/inspect"
)

func Example() {
	mr, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	ctx := context.Background()

	// A lock held twice by one owner, as lock.Mutex leaves it, but whose
	// TTL was lost, and a fencing counter an older version left without
	// one: two leaks.
	rdb.HSet(ctx, "order:1", "6f1c2a9e-0000-4000-8000-000000000001:7", 2)
	rdb.Set(ctx, "redisson_lock_token:{order:1}", 12, 0)

	in := inspect.New(rdb)
	e, _ := in.Get(ctx, "order:1")
	fmt.Println(e.Kind, e.Holders[0].ID, e.Holders[0].Count, *e.FencingToken, e.TTLMs)
	rep, _ := in.Leaks(ctx, "*")
	for _, f := range rep.Findings {
		fmt.Println(f.Key, f.Problem)
	}
	fmt.Println("keys checked:", rep.Keys)
	// Output:
	// lock 6f1c2a9e-0000-4000-8000-000000000001:7 2 12 -1
	// order:1 no-ttl
	// redisson_lock_token:{order:1} no-ttl
	// keys checked: 2
}
