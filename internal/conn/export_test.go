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

// TwinHook is the hook of rdb's twin that sends marked calls now (nil: none).
func TwinHook(rdb redis.UniversalClient) any {
	t := sharedOf(Client{rdb: rdb}).twin.Value()
	if t == nil {
		return nil
	}
	return t.hook.Load()
}
