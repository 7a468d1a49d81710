package lock_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/lock"
)

// Do takes the lock, runs the function with the hold's context and
// unlocks on every path; the function's error comes back as it was.
func ExampleMutex_Do() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()

	mu := lock.New(rdb, "invoice:42")
	errFull := errors.New("disk full")
	err := mu.Do(context.Background(), func(held context.Context) error {
		token, _ := lock.FencingToken(held)
		fmt.Println("inside, token drawn:", token > 0, "locked:", mr.Exists("invoice:42"))
		return errFull
	})
	fmt.Println(errors.Is(err, errFull), "locked:", mr.Exists("invoice:42"))
	// Output:
	// inside, token drawn: true locked: true
	// true locked: false
}

// The context given to Lock bounds the wait only: a deadline that passes
// while the lock is held does not end the hold (WithWaitTimeout is the
// other way to bound the wait).
func ExampleMutex_Lock_waitBound() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()

	mu := lock.New(rdb, "report:7")
	wait, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	held, err := mu.Lock(wait)
	if err != nil {
		fmt.Println(err)
		return
	}
	<-wait.Done() // the wait's deadline passes during the work
	fmt.Println("hold:", held.Err(), "locked:", mr.Exists("report:7"))
	fmt.Println(mu.Unlock(held))
	// Output:
	// hold: <nil> locked: true
	// <nil>
}

// NewOwner makes a fresh owner from a hold's context: goroutines handed
// the hold share it (they would re-enter), while with NewOwner each one
// waits its turn. A hold of another lock never lends its owner anyway.
func ExampleNewOwner() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()

	batch := lock.New(rdb, "batch:1")
	held, _ := batch.Lock(context.Background())

	_, err := batch.TryLock(lock.NewOwner(held))
	fmt.Println("fresh owner:", errors.Is(err, lock.ErrNotAcquired))
	inner, err := batch.TryLock(held)
	fmt.Println("the hold's own context re-enters:", err)
	_ = batch.Unlock(inner)

	// Fan-out from batch:1's hold: each goroutine is its own owner of row:9.
	row := lock.New(rdb, "row:9")
	var wg sync.WaitGroup
	counts := make([]int, 3)
	for i := range counts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = row.Do(held, func(h context.Context) error {
				counts[i], _ = row.HoldCount(h)
				return nil
			})
		}()
	}
	wg.Wait()
	fmt.Println("each held row:9 once:", counts)
	_ = batch.Unlock(held)
	// Output:
	// fresh owner: true
	// the hold's own context re-enters: <nil>
	// each held row:9 once: [1 1 1]
}

// WithHoldScopedToContext ties the hold to the acquiring context, as
// database/sql's BeginTx ties a transaction: when that context ends, the
// hold is released in the background.
func ExampleWithHoldScopedToContext() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()

	mu := lock.New(rdb, "request:5", lock.WithHoldScopedToContext())
	request, cancel := context.WithCancel(context.Background())
	held, _ := mu.Lock(request)
	cancel() // the request ends
	<-held.Done()
	for mr.Exists("request:5") {
		time.Sleep(time.Millisecond) // released in the background
	}
	fmt.Println("released:", context.Cause(held), mu.Unlock(held))
	// Output:
	// released: context canceled: the hold of lock "request:5" ended with its acquiring context (context canceled) <nil>
}

// A Mutex's FencingToken is its own hold's token, even from a context of
// holds of other locks taken inside it: the order's token from a line
// item's context.
func ExampleMutex_FencingToken() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()

	order, item := lock.New(rdb, "order:1"), lock.New(rdb, "order:1:item:3")
	_ = order.Do(context.Background(), func(o context.Context) error {
		return item.Do(o, func(i context.Context) error {
			orderTok, _ := order.FencingToken(i)
			itemTok, _ := item.FencingToken(i)
			innermost, _ := lock.FencingToken(i)
			fmt.Println(orderTok < itemTok, innermost == itemTok)
			return nil
		})
	})
	// Output: true true
}

// Remaining tells a holder how long it may still count on its hold.
func ExampleRemaining() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()

	mu := lock.New(rdb, "report:8", lock.WithLeaseTime(10*time.Second))
	held, _ := mu.Lock(context.Background())
	left, ok := lock.Remaining(held)
	fmt.Println(ok, left > 9*time.Second, left <= 10*time.Second)
	_ = mu.Unlock(held)
	left, ok = lock.Remaining(held)
	fmt.Println(ok, left)
	_, ok = lock.Remaining(context.Background())
	fmt.Println(ok)
	// Output:
	// true true true
	// true 0s
	// false
}
