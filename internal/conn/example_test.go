package conn_test

import (
	"context"
	"fmt"
	"sync"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/internal/conn"
)

func ExamplePipe() {
	mr := miniredis.NewMiniRedis()
	if err := mr.Start(); err != nil {
		panic(err)
	}
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()

	// Many goroutines, one Pipe: under load their commands share round trips.
	p := conn.PipeFor(rdb)
	var wg sync.WaitGroup
	for range 100 {
		wg.Go(func() { _ = p.Process(context.Background(), redis.NewIntCmd(context.Background(), "incr", "hits")) })
	}
	wg.Wait()
	fmt.Println(rdb.Get(context.Background(), "hits").Val())
	// Output: 100
}

// Addr names a client's server(s) in errors and spans.
func ExampleAddr() {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	defer c.Close()
	fmt.Println(conn.Addr(c))
	// Output: 127.0.0.1:6379
}
