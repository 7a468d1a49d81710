package errs_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/relock-go/relock/internal/errs"
)

func Example() {
	err := errs.New("trylock", "lock", "order:1", errs.ErrNotAcquired)
	fmt.Println(err)
	fmt.Println(errors.Is(err, errs.ErrNotAcquired))
	// Output:
	// relock: trylock lock "order:1": not acquired
	// true
}

// Every call of a primitive checks its arguments through its Ident first,
// and wraps its errors with it.
func ExampleIdent() {
	unmade := errs.Ident{Primitive: "lock", Invalid: "Mutex not made by lock.New"}
	var zero errs.Ident
	fmt.Println(zero.Check("lock", context.Background(), unmade))

	bad := errs.Ident{Primitive: "lock", Name: "", Invalid: "empty name"}
	fmt.Println(bad.Check("unlock", context.Background(), unmade))

	good := errs.Ident{Primitive: "semaphore", Name: "pool"}
	fmt.Println(good.Check("acquire", context.Background(), unmade))
	// Output:
	// relock: lock "": invalid argument: Mutex not made by lock.New
	// relock: unlock lock "": invalid argument: empty name
	// <nil>
}
