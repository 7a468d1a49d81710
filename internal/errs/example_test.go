package errs_test

import (
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
