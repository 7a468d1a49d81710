package watchdog_test

import (
	"context"
	"fmt"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/lock"
	"github.com/relock-go/relock/watchdog"
)

// A watchdog with a fake clock renews a lock in step with miniredis's
// FastForward: the 30 s lock outlives a minute of server time.
func Example() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()

	clk := watchdog.NewFakeClock(time.Unix(0, 0))
	wd := watchdog.New(watchdog.WithClock(clk))
	mu := lock.New(rdb, "report", lock.WithWatchdog(wd))
	held, _ := mu.Lock(context.Background())

	for i := 1; i <= 6; i++ {
		for clk.Pending() == 0 { // the wheel sleeps on the fake clock
			time.Sleep(time.Millisecond)
		}
		clk.Advance(10 * time.Second)
		for wd.Stats().Renewed < int64(i) {
			time.Sleep(time.Millisecond)
		}
		mr.FastForward(10 * time.Second)
	}
	fmt.Println("held after 60 s:", mr.Exists("report"), held.Err())
	fmt.Println("renewals:", wd.Stats().Renewed)
	_ = mu.Unlock(held)
	// Output:
	// held after 60 s: true <nil>
	// renewals: 6
}
