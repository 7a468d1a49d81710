package core_test

import (
	"fmt"
	"time"

	"github.com/relock-go/relock/internal/core"
)

func ExampleApply() {
	c := core.Apply([]core.Option{core.WithLeaseTime(10 * time.Second)})
	fmt.Println(c.Lease(), c.Renewed())
	bad := core.Apply([]core.Option{core.WithLeaseTime(0)})
	fmt.Println(bad.Invalid)
	// Output:
	// 10s false
	// lease time 0s must be at least 30ms
}
