package core_test

import (
	"context"
	"fmt"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/relock-go/relock/internal/conn"
	"github.com/relock-go/relock/internal/core"
	"github.com/relock-go/relock/tracing"
)

// A primitive hands the loop one try (here a plain SET NX PX lock) and the
// channel its unlock publishes to. Alice takes the lock at once; Bob's
// TryLock fails; Bob's Lock waits until Alice's unlock wakes him.
func Example() {
	mr, err := miniredis.Run()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer mr.Close()
	client := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer client.Close()
	ctx := context.Background()

	const name, channel = "order:1", "redisson_lock__channel:{order:1}"
	hub := core.For(conn.Of(client))
	request := func(owner string, entry core.Entry) core.Request {
		return core.Request{
			Hub:      hub,
			Channel:  channel,
			Entry:    entry,
			Fallback: 30 * time.Second,
			Attempt: core.TryFunc(func(ctx context.Context) (core.Result, error) {
				ok, err := client.SetNX(ctx, name, owner, 30*time.Second).Result()
				if err != nil || ok {
					return core.Result{Acquired: ok}, err
				}
				ttl, err := client.PTTL(ctx, name).Result()
				return core.Result{TTL: ttl}, err
			}),
		}
	}

	// Do also reports whether the span was recorded; only the error
	// matters here.
	// The span Do wraps around the loop.
	tr := core.Trace{Tracer: noop.NewTracerProvider().Tracer("example"), Name: tracing.SpanAcquireLock}
	do := func(req core.Request) error { return core.Acquire(ctx, tr, req) }
	fmt.Println("alice lock:", do(request("alice", core.TryThenQueue)))
	fmt.Println("bob trylock:", do(request("bob", core.SingleTry)))

	done := make(chan error, 1)
	go func() { done <- do(request("bob", core.TryThenQueue)) }()
	for !hub.Waiting(channel) { // Bob tried, and queued
		time.Sleep(time.Millisecond)
	}

	// Alice unlocks: the key goes, the unlock is published for other
	// processes, and the local queue's head is woken at once.
	client.Del(ctx, name)
	client.Publish(ctx, channel, "0")
	hub.Release(channel)

	fmt.Println("bob lock:", <-done)
	fmt.Println("holder:", client.Get(ctx, name).Val())
	// Output:
	// alice lock: <nil>
	// bob trylock: not acquired
	// bob lock: <nil>
	// holder: bob
}
