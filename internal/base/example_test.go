package base_test

import (
	"context"
	"fmt"

	"github.com/relock-go/relock/internal/base"
)

// Every call of a primitive checks its arguments through its Ident first,
// and wraps its errors with it.
func Example() {
	unmade := base.Ident{Primitive: "lock", Invalid: "Mutex not made by lock.New"}
	var zero base.Ident
	fmt.Println(zero.Check("lock", context.Background(), unmade))

	bad := base.Ident{Primitive: "lock", Name: "", Invalid: "empty name"}
	fmt.Println(bad.Check("unlock", context.Background(), unmade))

	good := base.Ident{Primitive: "semaphore", Name: "pool"}
	fmt.Println(good.Check("acquire", context.Background(), unmade))
	// Output:
	// relock: lock "": invalid argument: Mutex not made by lock.New
	// relock: unlock lock "": invalid argument: empty name
	// <nil>
}
