package conn_test

import (
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/internal/conn"
)

// callCounters keeps a callCounter per client; each reaches its client through a
// Ref, so that the registry does not keep dropped clients alive.
type callCounter struct {
	client conn.Ref
	calls  int
}

var callCounters conn.Map[*callCounter]

func newCallCounter(c conn.Client) *callCounter {
	return &callCounter{client: conn.NewRef(c)}
}

func ExampleMap() {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	defer rdb.Close()
	client := conn.Of(rdb)
	for range 3 {
		c := callCounters.Get(client, newCallCounter)
		c.calls++
	}
	c := callCounters.Get(client, nil) // made already: newV is not called
	fmt.Println(c.calls, c.client.Client() == client, callCounters.Len())
	// Output: 3 true 1
}
