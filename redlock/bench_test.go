package redlock_test

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/internal/redistest"
	"github.com/relock-go/relock/lock"
	"github.com/relock-go/relock/redlock"
)

// The two benchmarks are read together: a Redlock over 5 masters tries
// and releases its members in parallel, so Lock+Unlock should cost about
// what it costs on one master (the ratio of their ns/op), not 5 times as
// much. Both run against real redis-server processes on loopback, with
// the same client options, in the same run.

func benchMembers(b *testing.B, n int) []redlock.Member {
	srvs := redistest.StartServers(b, n)
	members := make([]redlock.Member, n)
	for i, s := range srvs {
		members[i] = lock.New(s.Client(b, func(o *redis.Options) { o.PoolSize = 16 }), "bench")
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
