package conn

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// Pipes is how many clients have a Pipe now: an entry in the registry.
func Pipes() int { return clients.Len() }

// HasTwin reports whether rdb has a twin.
func HasTwin(rdb redis.UniversalClient) bool { return sharedOf(Client{rdb: rdb}).twinMade.Load() }

// Timed is ctx marked for rdb's twin, as the package's own calls mark it.
var Timed = func(ctx context.Context, rdb redis.UniversalClient) context.Context { return timed(ctx, rdb, nil) }
