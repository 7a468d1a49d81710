package history_test

import (
	"fmt"
	"time"

	"github.com/relock-go/relock/internal/testkit/history"
)

// A test records each hold from the client side and checks the record at
// the end. Here two owners' holds of "order:1" overlap by a millisecond,
// which is a violation whatever the network did: both client intervals
// lie inside the server's holds.
func Example() {
	h := history.New()
	start := time.Now()
	h.Add(history.Hold{Lock: "order:1", Owner: "A", Kind: history.Exclusive,
		Token: 1, HasToken: true, Acquired: start, Released: start.Add(10 * time.Millisecond)})
	h.Add(history.Hold{Lock: "order:1", Owner: "B", Kind: history.Exclusive,
		Token: 2, HasToken: true, Acquired: start.Add(9 * time.Millisecond), Released: start.Add(20 * time.Millisecond)})
	// Readers share; a semaphore of 2 permits holds 2.
	h.Add(history.Hold{Lock: "catalog", Owner: "R1", Kind: history.Shared, Acquired: start, Released: start.Add(time.Second)})
	h.Add(history.Hold{Lock: "catalog", Owner: "R2", Kind: history.Shared, Acquired: start, Released: start.Add(time.Second)})
	h.Add(history.Hold{Lock: "exports", Kind: history.Permits, N: 2, Size: 2, Acquired: start, Released: start.Add(time.Second)})

	for _, v := range h.Check() {
		fmt.Println(v.Problem, "on", v.Lock, "between", v.Holds[0].Owner, "and", v.Holds[1].Owner)
	}
	// Output:
	// exclusive holds overlap on order:1 between A and B
}
