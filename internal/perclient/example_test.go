package perclient_test

import (
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/internal/perclient"
)

// counters keeps a counter per client; each reaches its client through a
// Ref, so that the registry does not keep dropped clients alive.
type counter struct {
	client perclient.Ref
	calls  int
}

var counters perclient.Map[*counter]

func newCounter(c redis.UniversalClient) *counter { return &counter{client: perclient.NewRef(c)} }

func Example() {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	defer rdb.Close()
	for range 3 {
		c := counters.Get(rdb, newCounter)
		c.calls++
	}
	c := counters.Get(rdb, nil) // made already: newV is not called
	fmt.Println(c.calls, c.client.Client() == redis.UniversalClient(rdb), counters.Len())
	// Output: 3 true 1
}
