// Command fairqueue shows a fair lock serialising one tenant's jobs
// across services: every service queues for the tenant's lock, and the
// lock goes to them in the order they came, whoever wakes first, as
// Redisson's RFairLock would hand it (the same keys: a Java service can
// queue in the same line).
//
// A first service holds the lock while four more arrive, one after
// another; then each takes the lock in turn and runs its job. A fifth
// gives up while queued (its wait bound passes): it leaves the line at
// once and nobody waits for it.
//
//	go run ./examples/fairqueue                           # embedded miniredis
//	REDIS_ADDR=127.0.0.1:6379 go run ./examples/fairqueue # a real Redis
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/examples/internal/exredis"
	"github.com/relock-go/relock/lock"
)

const (
	name  = "examples:tenant:42"
	queue = "redisson_lock_queue:{" + name + "}"
)

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, out io.Writer) error {
	srv, err := exredis.Open(out)
	if err != nil {
		return err
	}
	defer srv.Close()
	admin := srv.Client()
	defer admin.Close()

	// Each service is its own client, as separate processes would be.
	first := srv.Client()
	defer first.Close()
	held, err := lock.NewFair(first, name).Lock(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintln(out, "service 0 holds the tenant's lock")

	var mu sync.Mutex
	var served []string
	var wg sync.WaitGroup
	gaveUp := make(chan struct{}) // the quitter's Lock has returned
	queueUp := func(service string, rdb *redis.Client, opts ...lock.LockOption) {
		defer wg.Done()
		if service == "quitter" {
			defer close(gaveUp)
		}
		fair := lock.NewFair(rdb, name)
		h, err := fair.Lock(ctx, opts...)
		if errors.Is(err, lock.ErrNotAcquired) {
			mu.Lock()
			served = append(served, service+" gave up")
			mu.Unlock()
			return
		}
		if err != nil {
			log.Print(err)
			return
		}
		mu.Lock()
		served = append(served, service)
		mu.Unlock()
		time.Sleep(10 * time.Millisecond) // the job
		if err := fair.Unlock(h); err != nil {
			log.Print(err)
		}
	}
	services := []string{"service 1", "service 2", "quitter", "service 3", "service 4"}
	for i, s := range services {
		rdb := srv.Client()
		defer rdb.Close()
		var opts []lock.LockOption
		if s == "quitter" {
			opts = append(opts, lock.WithWaitTimeout(300*time.Millisecond))
		}
		wg.Add(1)
		go queueUp(s, rdb, opts...)
		if err := waitQueued(ctx, admin, i+1); err != nil {
			return err
		}
		fmt.Fprintf(out, "%s queues\n", s)
	}
	// The quitter's bound passes: the line is one shorter.
	if err := waitQueued(ctx, admin, len(services)-1); err != nil {
		return err
	}
	<-gaveUp
	if err := lock.NewFair(first, name).Unlock(held); err != nil {
		return err
	}
	wg.Wait()
	fmt.Fprintln(out, "served in this order:")
	for _, s := range served {
		fmt.Fprintln(out, " ", s)
	}
	n, err := admin.LLen(ctx, queue).Result()
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "left in the line: %d\n", n)
	return nil
}

// waitQueued waits until n services are in the tenant's line.
func waitQueued(ctx context.Context, rdb *redis.Client, n int) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for {
		got, err := rdb.LLen(ctx, queue).Result()
		if err != nil {
			return err
		}
		if got == int64(n) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d in line, want %d: %w", got, n, ctx.Err())
		case <-time.After(time.Millisecond):
		}
	}
}
