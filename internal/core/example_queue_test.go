package core_test

import (
	"context"
	"fmt"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/internal/conn"
	"github.com/relock-go/relock/internal/core"
)

// Two goroutines wait for one lock. The unlock message wakes the head of
// the queue only; when the head takes the lock, the next waiter becomes
// head with the holder's lease as its fallback timer, and the holder's
// local release wakes it.
func ExampleHub() {
	mr, err := miniredis.Run()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer mr.Close()
	client := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer client.Close()
	ctx := context.Background()

	hub := core.For(conn.Of(client))
	const channel = "redisson_lock__channel:{order:1}"
	first, err := hub.Join(ctx, channel, false)
	if err != nil {
		fmt.Println(err)
		return
	}
	second, err := hub.Join(ctx, channel, false)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("waiting:", hub.Waiting(channel), "| first is head:", first.Head(), "| second is head:", second.Head())

	// Join returned, so the subscription is confirmed: the message is heard.
	fmt.Println("receivers:", client.Publish(ctx, channel, "0").Val())
	awaitWake(first)
	kick, _ := first.Take()
	fmt.Println("first woken to try:", kick)

	first.Leave(true, 30*time.Second) // it took the lock
	awaitWake(second)
	kick, hint := second.Take()
	fmt.Println("second promoted: kick", kick, "hint", hint)

	hub.Release(channel) // the first goroutine unlocked
	awaitWake(second)
	kick, _ = second.Take()
	fmt.Println("second woken to try:", kick)

	second.Leave(true, 30*time.Second)
	fmt.Println("waiting:", hub.Waiting(channel))
	// Output:
	// waiting: true | first is head: true | second is head: false
	// receivers: 1
	// first woken to try: true
	// second promoted: kick false hint 30s
	// second woken to try: true
	// waiting: false
}

func awaitWake(w *core.Waiter) {
	select {
	case <-w.Wake():
	case <-time.After(10 * time.Second):
		fmt.Println("not woken")
	}
}
