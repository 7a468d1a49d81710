package lock_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/conn"
	"github.com/relock-go/relock/internal/testkit/redistest"
	"github.com/relock-go/relock/lock"
)

// An uncontended Lock and Unlock on a default go-redis client (no
// ContextTimeoutEnabled) run on the caller's goroutine: the release's
// bound comes from the client's twin, and no worker of the client's pool
// is started.
func TestUncontendedPairRunsOnTheCallersGoroutine(t *testing.T) {
	for _, b := range redistest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			env := b.New(t)
			require.False(t, env.Client.Options().ContextTimeoutEnabled)
			pool := conn.PoolFor(conn.Of(env.Client))
			for i := range 50 {
				for _, mu := range []*lock.Mutex{lock.New(env.Client, fmt.Sprint("caller:", i)), lock.NewFair(env.Client, fmt.Sprint("caller:fair:", i))} {
					h, err := mu.Lock(context.Background())
					require.NoError(t, err)
					require.NoError(t, mu.Unlock(h))
				}
			}
			require.Zero(t, pool.Started(), "a call was handed to a worker")
		})
	}
}
