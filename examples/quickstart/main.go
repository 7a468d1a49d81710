// Command quickstart shows relock's reentrant lock in four short scenes:
// nested locking, a contended handoff, the watchdog keeping a lock through
// a long critical section, and a holder told that its lock was lost.
//
//	go run ./examples/quickstart                          # embedded miniredis
//	REDIS_ADDR=127.0.0.1:6379 go run ./examples/quickstart # a real Redis
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/examples/internal/exredis"
	"github.com/relock-go/relock/lock"
)

func main() {
	rdb, stop := connect()
	defer stop()
	ctx := context.Background()

	nested(ctx, rdb)
	handoff(ctx, rdb)
	watchdog(ctx, rdb)
	lost(ctx, rdb)
}

// connect returns a client of REDIS_ADDR, or of an embedded miniredis whose
// clock follows the wall clock (miniredis expires keys only when told), so
// leases behave as on a real server.
func connect() (*redis.Client, func()) {
	rdb, stop, err := exredis.Connect(os.Stdout)
	if err != nil {
		log.Fatal(err)
	}
	return rdb, stop
}

// nested: a function that holds the lock calls another that takes it too.
func nested(ctx context.Context, rdb *redis.Client) {
	fmt.Println("1. Nested locking")
	mu := lock.New(rdb, "quickstart:order:1")
	held, err := mu.Lock(ctx)
	check(err)
	n, _ := mu.HoldCount(held)
	fmt.Printf("   updateOrder took the lock (hold count %d)\n", n)
	addLine(held, rdb) // passes its context on: the same owner re-enters
	check(mu.Unlock(held))
	locked, _ := mu.IsLocked(ctx)
	fmt.Printf("   updateOrder unlocked; still locked: %v\n\n", locked)
}

func addLine(ctx context.Context, rdb *redis.Client) {
	mu := lock.New(rdb, "quickstart:order:1")
	held, err := mu.Lock(ctx) // would deadlock in a non-reentrant lock
	check(err)
	n, _ := mu.HoldCount(held)
	tok, _ := lock.FencingToken(held)
	fmt.Printf("   addLine re-entered the same lock (hold count %d, fencing token %d)\n", n, tok)
	check(mu.Unlock(held))
}

// handoff: four goroutines take turns; each waits for the unlock message,
// not a polling interval.
func handoff(ctx context.Context, rdb *redis.Client) {
	fmt.Println("2. Contended handoff")
	mu := lock.New(rdb, "quickstart:counter")
	counter := 0
	var wg sync.WaitGroup
	start := time.Now()
	for w := 1; w <= 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 25 {
				held, err := mu.Lock(ctx) // each goroutine is its own owner
				check(err)
				counter++ // safe: one holder at a time
				check(mu.Unlock(held))
			}
		}()
	}
	wg.Wait()
	fmt.Printf("   4 goroutines x 25 increments under the lock: counter = %d (in %v)\n\n",
		counter, time.Since(start).Round(time.Millisecond))
}

// watchdog: a 600 ms lease outlives a 2 s critical section because the
// watchdog renews it every 200 ms.
func watchdog(ctx context.Context, rdb *redis.Client) {
	fmt.Println("3. The watchdog keeps a lock through a long critical section")
	mu := lock.New(rdb, "quickstart:report", lock.WithWatchdogTimeout(600*time.Millisecond))
	held, err := mu.Lock(ctx)
	check(err)
	for i := range 4 {
		time.Sleep(500 * time.Millisecond)
		ttl, _ := mu.TTL(ctx)
		fmt.Printf("   after %.1f s of work: still held, TTL %v (lease 600ms)\n",
			float64(i+1)/2, ttl.Round(10*time.Millisecond))
	}
	check(held.Err())
	check(mu.Unlock(held))
	fmt.Println("   done; unlocked")
	fmt.Println()
}

// lost: someone deletes the lock under the holder (an operator's force
// unlock, a failover); the holder's context ends with ErrLockLost.
func lost(ctx context.Context, rdb *redis.Client) {
	fmt.Println("4. A lost lock is reported through the context")
	mu := lock.New(rdb, "quickstart:job", lock.WithWatchdogTimeout(600*time.Millisecond))
	held, err := mu.Lock(ctx)
	check(err)
	_, err = lock.New(rdb, "quickstart:job").ForceUnlock(ctx)
	check(err)
	fmt.Println("   an operator force-unlocked the job's lock")
	select {
	case <-held.Done():
		fmt.Printf("   the holder's context ended: %v\n", context.Cause(held))
		fmt.Printf("   errors.Is(cause, lock.ErrLockLost) = %v: stop writing\n",
			errors.Is(context.Cause(held), lock.ErrLockLost))
	case <-time.After(5 * time.Second):
		fmt.Println("   the holder was not told (unexpected)")
	}
	fmt.Printf("   Unlock now says: %v\n", mu.Unlock(held))
}

func check(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
