package main

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// BenchmarkUncontended measures one Lock+Unlock pair of each library on its
// own key of a redis-server on loopback, with allocations, so that
//
//	go test -run '^$' -bench Uncontended -benchmem -count 5
//
// lists allocs/op side by side. The handles are the harness's own, so the
// libraries are called exactly as in the table.
func BenchmarkUncontended(b *testing.B) {
	srv, err := launchServer(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(srv.Stop)
	ctx := context.Background()
	client := func() *redisClient {
		c := newGoRedis(srv.Addr)
		b.Cleanup(func() { _ = c.Close() })
		return c
	}

	raw := client()
	sha, err := loadCAD(ctx, raw)
	if err != nil {
		b.Fatal(err)
	}
	rl, err := newRueidisLocker(srv.Addr, false)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(rl.Close)

	libs := []struct {
		name string
		lib  lib
	}{
		{"raw", rawLib(raw, sha, time.Millisecond)},
		{"relock", relockLib(client())},
		// A client that honours context deadlines lets a release run on
		// the caller's goroutine; a default one has it handed to a worker
		// so that Unlock keeps its bound.
		{"relock-ctxtimeout", relockLib(ctxTimeoutClient(srv.Addr, b))},
		{"redsync", redsyncLib([]*redisClient{client()}, time.Millisecond)},
		{"redislock", redislockLib(client(), time.Millisecond)},
		{"rueidislock", rueidisLib(rl)},
	}
	for _, l := range libs {
		b.Run(l.name, func(b *testing.B) {
			h := l.lib.make("alloc:" + l.name)
			// One pair outside the loop: connections dialled, scripts
			// loaded, first-use allocations done.
			if err := h.Lock(); err != nil {
				b.Fatal(err)
			}
			if err := h.Unlock(); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if err := h.Lock(); err != nil {
					b.Fatal(err)
				}
				if err := h.Unlock(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// ctxTimeoutClient is newGoRedis's client with ContextTimeoutEnabled.
func ctxTimeoutClient(addr string, b *testing.B) *redisClient {
	c := redis.NewClient(&redis.Options{Addr: addr, PoolSize: poolSize, ContextTimeoutEnabled: true})
	b.Cleanup(func() { _ = c.Close() })
	return c
}
