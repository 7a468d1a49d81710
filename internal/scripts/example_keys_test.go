package scripts_test

import (
	"fmt"

	"github.com/relock-go/relock/internal/conn"

	"github.com/relock-go/relock/internal/scripts"
)

func ExamplePrefix() {
	fmt.Println(scripts.Prefix("redisson_lock__channel", "order:1"))
	fmt.Println(conn.Slot("order:1") == conn.Slot(scripts.Prefix("redisson_lock_token", "order:1")))
	// Output:
	// redisson_lock__channel:{order:1}
	// true
}
