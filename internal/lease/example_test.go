package lease_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/internal/conn"
	"github.com/relock-go/relock/internal/errs"
	"github.com/relock-go/relock/internal/lease"
)

// A lease with a fixed lease time is never renewed: the watchdog tells its
// holder when it ends. Stop ends the tracking of a lease released in time.
func Example() {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never dialled: nothing is renewed
	defer c.Close()
	clk := lease.NewFakeClock(time.Unix(0, 0))
	wd := lease.New(lease.WithClock(clk))

	l := wd.Start(lease.Spec{Targets: []lease.Target{{Client: conn.Of(c), Keys: []string{"k"}}}, Timeout: time.Second}, clk.Now())
	lost := make(chan error, 1)
	l.OnLost(lease.LostFunc(func(err error) { lost <- err }))
	clk.Advance(2 * time.Second)
	fmt.Println(errors.Is(<-lost, errs.ErrLockLost))

	kept := wd.Start(lease.Spec{Targets: []lease.Target{{Client: conn.Of(c), Keys: []string{"j"}}}, Timeout: time.Minute}, clk.Now())
	kept.Stop()
	fmt.Println(kept.Lost())
	// Output:
	// true
	// <nil>
}
