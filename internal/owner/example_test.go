package owner_test

import (
	"context"
	"fmt"

	"github.com/relock-go/relock/internal/owner"
)

func Example() {
	ctx, id := owner.Ensure(context.Background())
	again, ok := owner.From(ctx)
	fmt.Println(ok, again == id)
	// Output: true true
}
