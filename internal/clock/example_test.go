package clock_test

import (
	"fmt"
	"time"

	"github.com/relock-go/relock/internal/clock"
)

func Example() {
	c := clock.NewFake(time.Unix(0, 0))
	t := c.NewTimer(10 * time.Second)
	c.Advance(10 * time.Second)
	fmt.Println((<-t.C()).Unix())
	// Output: 10
}
