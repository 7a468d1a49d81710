package cli_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/cmd/relock/internal/cli"
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
	// a lock as lock.Mutex writes it, without its TTL (a leak)
	rdb.HSet(ctx, "order:1", "6f1c2a9e-0000-4000-8000-000000000001:7", 1)
	rdb.Set(ctx, "redisson_lock_token:{order:1}", 4, time.Hour)

	app := &cli.App{Stdout: os.Stdout, Stderr: os.Stdout}
	code := app.Run(ctx, []string{"ls", "--addr", mr.Addr()})
	fmt.Println("exit", code)
	code = app.Run(ctx, []string{"--addr", mr.Addr(), "leaks"})
	fmt.Println("exit", code)
	// Output:
	// NAME     KIND  STATE  TTL   TOKEN  WAITERS  HOLDER                                  SIDE  COUNT  LEASE  LABEL
	// order:1  lock  held   none  4      0        6f1c2a9e-0000-4000-8000-000000000001:7  hold  1      none   -
	// exit 0
	// KEY      PROBLEM  HOLDER  DETAIL
	// order:1  no-ttl   -       lock hash without TTL: it never expires
	// 1 leak(s) found
	// 2 key(s) of ours checked; each must expire within 24 h
	// exit 3
}
