package minacl_test

import (
	"fmt"

	"github.com/relock-go/relock/cmd/relock/internal/minacl"
)

func Example() {
	acl := minacl.For(minacl.Lock, "app:", minacl.Deployment{})
	fmt.Println(acl.Channels)
	// Output:
	// [redisson_lock__channel:app:* redisson_lock__channel:{app:*]
}
