// Command nested shows reentrant locking across a service's call chain.
//
// PlaceOrder locks the order, then calls reserveStock, which calls
// chargePayment; each of them locks the same order again, because each can
// also be called on its own and must not run unlocked. With a non-reentrant
// lock the second Lock would deadlock. relock carries the owner in the
// context: every function passes on the context its Lock returned, so the
// nested Locks re-enter (the hold count goes 1, 2, 3 and back), and each
// acquisition draws its own fencing token. Another request, which starts
// from its own context, is another owner and is kept out until the last
// Unlock.
//
//	go run ./examples/nested                           # embedded miniredis
//	REDIS_ADDR=127.0.0.1:6379 go run ./examples/nested # a real Redis
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/examples/internal/exredis"
	"github.com/relock-go/relock/lock"
)

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, out io.Writer) error {
	rdb, closeAll, err := exredis.Connect(out)
	if err != nil {
		return err
	}
	defer closeAll()
	s := &service{rdb: rdb, out: out}
	if err := s.PlaceOrder(ctx, "42"); err != nil {
		return err
	}
	locked, err := s.orderLock("42").IsLocked(ctx)
	fmt.Fprintf(out, "after PlaceOrder returned: order locked = %v\n", locked)
	return err
}

type service struct {
	rdb *redis.Client
	out io.Writer
}

// orderLock is cheap: a Mutex is only a name and a client, so each function
// makes its own rather than threading one through.
func (s *service) orderLock(id string) *lock.Mutex {
	return lock.New(s.rdb, "examples:nested:order:"+id)
}

// enter locks the order for fn, reports the hold, and unlocks when fn returns.
// fn gets the context Lock returned: it carries the owner and this hold.
func (s *service) enter(ctx context.Context, id, who string, depth int, fn func(context.Context) error) error {
	mu := s.orderLock(id)
	held, err := mu.Lock(ctx) // re-enters when ctx already carries the owner
	if err != nil {
		return err
	}
	n, _ := mu.HoldCount(held)
	tok, _ := lock.FencingToken(held)
	indent := strings.Repeat("  ", depth)
	fmt.Fprintf(s.out, "%s%s: locked, hold count %d, fencing token %d\n", indent, who, n, tok)

	err = fn(held)
	if uerr := mu.Unlock(held); err == nil { // unlock whether fn failed or not
		err = uerr
	}
	n, _ = mu.HoldCount(ctx) // the caller's context: its own hold remains
	fmt.Fprintf(s.out, "%s%s: unlocked, hold count %d\n", indent, who, n)
	return err
}

func (s *service) PlaceOrder(ctx context.Context, id string) error {
	return s.enter(ctx, id, "PlaceOrder", 0, func(ctx context.Context) error {
		if err := s.reserveStock(ctx, id); err != nil {
			return err
		}
		// Meanwhile another request for the same order, on its own context,
		// is another owner: it cannot get in while the chain holds the lock.
		_, err := s.orderLock(id).TryLock(context.Background())
		fmt.Fprintf(s.out, "  another request's TryLock: not acquired = %v\n", errors.Is(err, lock.ErrNotAcquired))
		if err == nil {
			return errors.New("another owner got the lock")
		}
		return nil
	})
}

func (s *service) reserveStock(ctx context.Context, id string) error {
	return s.enter(ctx, id, "reserveStock", 1, func(ctx context.Context) error {
		return s.chargePayment(ctx, id)
	})
}

func (s *service) chargePayment(ctx context.Context, id string) error {
	return s.enter(ctx, id, "chargePayment", 2, func(ctx context.Context) error {
		return nil // the payment would be charged here, under the order's lock
	})
}
