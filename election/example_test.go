package election_test

import (
	"context"
	"fmt"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/election"
)

func Example() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	ctx := context.Background()

	e := election.New(rdb, "reconciler")
	leading, err := e.Campaign(ctx, "pod-a")
	if err != nil {
		fmt.Println(err)
		return
	}
	l, _ := e.Leader(ctx)
	epoch, _ := election.Epoch(leading)
	fmt.Println("leader:", l.Value, "epoch matches:", l.Epoch == epoch)

	_ = e.Proclaim(leading, "pod-a (draining)")
	l, _ = e.Leader(ctx)
	fmt.Println("leader:", l.Value)

	_ = e.Resign(leading)
	_, err = e.Leader(ctx)
	fmt.Println(err)
	// Output:
	// leader: pod-a epoch matches: true
	// leader: pod-a (draining)
	// relock: leader election "reconciler": no leader
}

func ExampleElection_Run() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	ctx, stop := context.WithCancel(context.Background())

	e := election.New(rdb, "cron")
	err := e.Run(ctx, "pod-a", func(leading context.Context) error {
		epoch, _ := election.Epoch(leading)
		fmt.Println("leading, epoch > 0:", epoch > 0)
		stop() // a shutdown: the leadership lasts until lead returns
		<-leading.Done()
		fmt.Println("draining, then returning")
		return nil
	})
	fmt.Println("Run returned", err)
	// Output:
	// leading, epoch > 0: true
	// draining, then returning
	// Run returned <nil>
}

func ExampleElection_Observe() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	ctx, stop := context.WithCancel(context.Background())
	defer stop()

	e := election.New(rdb, "scheduler")
	changes := e.Observe(ctx)
	fmt.Println("vacant:", (<-changes).Vacant())
	leading, _ := e.Campaign(ctx, "pod-b")
	fmt.Println("leader:", (<-changes).Value)
	_ = e.Resign(leading)
	fmt.Println("vacant:", (<-changes).Vacant())
	// Output:
	// vacant: true
	// leader: pod-b
	// vacant: true
}
