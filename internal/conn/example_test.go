package conn_test

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/internal/conn"
)

// exampleClient is a client on an embedded miniredis, and what closes
// both.
func exampleClient() (*redis.Client, func()) {
	mr := miniredis.NewMiniRedis()
	if err := mr.Start(); err != nil {
		panic(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	return rdb, func() { _ = rdb.Close(); mr.Close() }
}

func ExamplePipe() {
	rdb, stop := exampleClient()
	defer stop()

	// Many goroutines, one Pipe: under load their commands share round trips.
	p := conn.PipeFor(conn.Of(rdb))
	var wg sync.WaitGroup
	for range 100 {
		wg.Go(func() { _ = p.Process(context.Background(), conn.NewCmd(context.Background(), 1, "incr", "hits")) })
	}
	wg.Wait()
	fmt.Println(rdb.Get(context.Background(), "hits").Val())
	// Output: 100
}

// Addr names a client's server(s) in errors and spans.
func ExampleClient_Addr() {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	defer c.Close()
	fmt.Println(conn.Of(c).Addr())
	// Output: 127.0.0.1:6379
}

// A Client sends plain commands, alone or in one round trip, and reads
// their replies; a missing key's reply is Nil.
func ExampleClient() {
	rdb, stop := exampleClient()
	defer stop()
	ctx := context.Background()

	c := conn.Of(rdb)
	_ = c.Do(ctx, "set", "k", "v", "px", 60000).Err()
	v, _ := c.Do(ctx, "get", "k").Text()
	fmt.Println(v)
	r := c.Pipelined(ctx, []any{"get", "missing"}, []any{"pttl", "k"})
	ttl, _ := r[1].Millis()
	fmt.Println(errors.Is(r[0].Err(), conn.Nil), ttl > 0)
	// Output:
	// v
	// true true
}
