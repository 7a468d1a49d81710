package owner_test

import (
	"context"
	"fmt"

	"github.com/relock-go/relock/internal/owner"
)

func Example() {
	id := owner.Mint()
	again, ok := owner.From(owner.With(context.Background(), id))
	fmt.Println(ok, again == id)
	// Output: true true
}
