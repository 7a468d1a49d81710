package optionstest_test

import (
	"fmt"
	"time"

	"github.com/relock-go/relock/internal/core/optionstest"
)

func Example() {
	_, valid, lease := optionstest.Fuzz(optionstest.Lease, int64(2*time.Second), 0, 0, 0)
	fmt.Println(valid, lease)
	_, valid, _ = optionstest.Fuzz(optionstest.Unlock, 0, 0, 0, int64(time.Microsecond))
	fmt.Println(valid)
	// Output:
	// true 2s
	// false
}
