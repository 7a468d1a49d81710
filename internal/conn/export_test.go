package conn

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// Pipes is how many clients have a Pipe now: an entry in the registry.
func Pipes() int { return clients.Len() }

// Twins is how many clients have a twin now.
func Twins() int {
	n := 0
	clients.m.Range(func(_, v any) bool {
		if v.(*shared).twinMade.Load() {
			n++
		}
		return true
	})
	return n
}

// Timed is ctx marked for rdb's twin, as the package's own calls mark it.
var Timed = func(ctx context.Context, rdb redis.UniversalClient) context.Context { return timed(ctx, rdb, nil) }
