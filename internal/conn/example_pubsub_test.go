package conn_test

import (
	"context"
	"fmt"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/internal/conn"
)

// printer prints what it hears on a channel.
type printer chan string

func (p printer) Message(channel, payload string) { p <- channel + ": " + payload }
func (p printer) Missed(string)                   {}
func (p printer) Broken(string)                   {}

func ExamplePubSub() {
	mr, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	ctx := context.Background()

	ps := conn.PubSubFor(conn.Of(rdb))
	heard := make(printer, 1)
	sub, err := ps.Subscribe(ctx, "unlock:orders", heard)
	if err != nil {
		panic(err)
	}
	defer sub.Cancel()
	<-sub.Ready() // confirmed by Redis: a message published now is heard
	rdb.Do(ctx, ps.PublishCommand(), "unlock:orders", "0")
	fmt.Println(<-heard)
	// Output: unlock:orders: 0
}
