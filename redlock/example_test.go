package redlock_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/lock"
	"github.com/relock-go/relock/redlock"
)

// Example holds one lock across three independent Redis masters: it is
// held while a quorum (2 of 3) of them hold it. The masters here are
// embedded miniredis servers; in production each member's client points
// at its own redis-server.
func Example() {
	var members []redlock.Member
	for range 3 {
		mr, err := miniredis.Run()
		if err != nil {
			panic(err)
		}
		defer mr.Close()
		rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
		defer rdb.Close() // runs before mr.Close
		members = append(members, lock.New(rdb, "invoice:42"))
	}
	rl := redlock.New(members)
	fmt.Println("quorum:", rl.Quorum(), "of", len(members))

	held, err := rl.Lock(context.Background())
	if err != nil {
		panic(err)
	}
	token, _ := lock.FencingToken(held) // advisory: the largest member token
	fmt.Println("fencing token:", token > 0)

	// Another request (another owner) is refused while the quorum is held,
	// and the error says what each member answered.
	_, err = rl.TryLock(context.Background())
	var ne *redlock.NodeError
	fmt.Println("another owner:", errors.Is(err, redlock.ErrNotAcquired), errors.As(err, &ne) && ne.Outcome == redlock.OutcomeHeld)

	fmt.Println("unlock:", rl.Unlock(held))
	fmt.Println("hold ended:", context.Cause(held))
	// Output:
	// quorum: 2 of 3
	// fencing token: true
	// another owner: true true
	// unlock: <nil>
	// hold ended: context canceled
}

// ExampleNewMulti locks two resources together, all or nothing: while one
// of them is held elsewhere, the multi-lock takes neither.
func ExampleNewMulti() {
	mr, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	ctx := context.Background()

	from, to := lock.New(rdb, "account:1"), lock.New(rdb, "account:2")
	transfer := redlock.NewMulti([]redlock.Member{from, to})

	other, err := to.Lock(ctx) // another owner holds account:2
	if err != nil {
		panic(err)
	}
	_, err = transfer.TryLock(ctx)
	fmt.Println("while account:2 is held:", errors.Is(err, redlock.ErrNotAcquired))
	// account:1 was given back in the background; Drain waits for it.
	if err := transfer.Drain(ctx); err != nil {
		panic(err)
	}
	fmt.Println("account:1 still taken:", mr.Exists("account:1"))
	if err := to.Unlock(other); err != nil {
		panic(err)
	}

	held, err := transfer.TryLock(ctx)
	if err != nil {
		panic(err)
	}
	fmt.Println("both held:", mr.Exists("account:1"), mr.Exists("account:2"))
	fmt.Println("unlock:", transfer.Unlock(held))
	// Output:
	// while account:2 is held: true
	// account:1 still taken: false
	// both held: true true
	// unlock: <nil>
}
