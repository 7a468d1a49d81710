package redlock_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/internal/testkit/redistest"
	"github.com/relock-go/relock/lock"
	"github.com/relock-go/relock/redlock"
)

// The two benchmarks are read together: a Redlock over 5 masters tries
// and releases its members in parallel, so Lock+Unlock should cost about
// what it costs on one master (the ratio of their ns/op), not 5 times as
// much. Both run against real redis-server processes on loopback, with
// the same client options, in the same run.

func benchClients(b *testing.B, n int) []*redis.Client {
	srvs := redistest.StartServers(b, n)
	cs := make([]*redis.Client, n)
	for i, s := range srvs {
		cs[i] = s.Client(b, func(o *redis.Options) { o.PoolSize = 16 })
	}
	return cs
}

func benchMembers(b *testing.B, n int) []redlock.Member {
	cs := benchClients(b, n)
	members := make([]redlock.Member, n)
	for i, c := range cs {
		members[i] = lock.New(c, "bench")
	}
	return members
}

func BenchmarkSingleNodeLockUnlock(b *testing.B) {
	mu := benchMembers(b, 1)[0].(*lock.Mutex)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		held, err := mu.Lock(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if err := mu.Unlock(held); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRedlock5LockUnlock(b *testing.B) {
	rl := redlock.New(benchMembers(b, 5))
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		held, err := rl.Lock(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if err := rl.Unlock(held); err != nil {
			b.Fatal(err)
		}
	}
}

// The floors say what the machine allows: the two round trips a
// lock+unlock pair cannot avoid (SET NX PX, then a compare-and-delete
// script), on one server and on 5 servers at once (one goroutine each,
// as the Redlock does). Their ratio is the best the Redlock ratio can be
// here: on a 2-core machine 5 redis-servers do not answer in parallel.

var cadScript = redis.NewScript(`if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0`)

func floorRound(ctx context.Context, b *testing.B, c *redis.Client) {
	if ok, err := c.SetNX(ctx, "raw", "me", 30*time.Second).Result(); err != nil || !ok {
		b.Error(ok, err)
		return
	}
	if err := cadScript.Run(ctx, c, []string{"raw"}, "me").Err(); err != nil {
		b.Error(err)
	}
}

func BenchmarkFloorSingleNode(b *testing.B) {
	c := benchClients(b, 1)[0]
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		floorRound(ctx, b, c)
	}
}

func BenchmarkFloor5Parallel(b *testing.B) {
	cs := benchClients(b, 5)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		var wg sync.WaitGroup
		for _, c := range cs {
			wg.Go(func() { floorRound(ctx, b, c) })
		}
		wg.Wait()
	}
}
