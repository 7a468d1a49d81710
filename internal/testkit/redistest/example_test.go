package redistest_test

import (
	"context"
	"fmt"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/internal/testkit/redistest"
)

// In a test, env comes from redistest.Backends()[i].New(t) or is built from
// redistest.Miniredis(t); here it is assembled by hand, since an example has
// no *testing.T. FastForward moves miniredis's clock, so the TTL runs out
// without the test sleeping.
func Example() {
	mr, err := miniredis.Run()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer mr.Close()
	client := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer client.Close()
	env := &redistest.Env{Client: client, Mini: mr}

	ctx := context.Background()
	env.Client.Set(ctx, "lease", "held", 30*time.Second)
	env.FastForward(10 * time.Second)
	fmt.Println(env.Client.Get(ctx, "lease").Val())
	env.FastForward(30 * time.Second)
	_, err = env.Client.Get(ctx, "lease").Result()
	fmt.Println(err == redis.Nil)
	// Output:
	// held
	// true
}

func ExampleParseClientList() {
	reply := "id=3 addr=127.0.0.1:50312 laddr=127.0.0.1:6379 fd=8 name=waiter age=2 idle=0 flags=P db=0 sub=1 psub=0 ssub=0 multi=-1 cmd=subscribe\n" +
		"id=4 addr=127.0.0.1:50314 laddr=127.0.0.1:6379 fd=9 name= age=0 idle=0 flags=N db=0 sub=0 psub=0 ssub=0 multi=-1 cmd=client|list\n"
	infos, err := redistest.ParseClientList(reply)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, ci := range infos {
		fmt.Printf("id=%d name=%q cmd=%s pubsub=%t\n", ci.ID, ci.Name, ci.Cmd, ci.IsPubSub())
	}
	// Output:
	// id=3 name="waiter" cmd=subscribe pubsub=true
	// id=4 name="" cmd=client|list pubsub=false
}
