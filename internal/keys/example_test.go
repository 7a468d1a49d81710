package keys_test

import (
	"fmt"

	"github.com/relock-go/relock/internal/keys"
)

func Example() {
	fmt.Println(keys.Prefix("redisson_lock__channel", "order:1"))
	fmt.Println(keys.Slot("order:1") == keys.Slot(keys.Prefix("redisson_lock_token", "order:1")))
	// Output:
	// redisson_lock__channel:{order:1}
	// true
}
