package options_test

import (
	"fmt"
	"time"

	"github.com/relock-go/relock/internal/options"
)

func Example() {
	c := options.Apply([]options.Option{options.WithLeaseTime(10 * time.Second)})
	fmt.Println(c.Lease(), c.Renewed())
	bad := options.Apply([]options.Option{options.WithLeaseTime(0)})
	fmt.Println(bad.Invalid)
	// Output:
	// 10s false
	// lease time 0s must be at least 30ms
}
