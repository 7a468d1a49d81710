package scripts_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/conn"
	"github.com/relock-go/relock/internal/testkit/redistest"
)

// A retried call's first attempt is made on the caller's goroutine, with
// no worker started, whether the client honours context deadlines
// (ContextTimeoutEnabled) or not (a default client's calls go on its twin,
// which does). Both keep the caller's bound on a stalled server.
func TestRetryingRunsOnTheCallersGoroutine(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	admin := srv.Client(t)
	for _, c := range []struct {
		name    string
		honours bool
	}{{"default", false}, {"ContextTimeoutEnabled", true}} {
		t.Run(c.name, func(t *testing.T) {
			client := srv.Client(t, func(o *redis.Options) { o.ContextTimeoutEnabled = c.honours })
			ctx := context.WithoutCancel(testContext(t)) // as a release's: it cannot end
			pool := conn.PoolFor(conn.Of(client))
			for i := range 5 {
				n, err := incr.With(1, "inline:"+c.name, 1).Retrying(ctx, conn.Of(client), time.Second).Int64()
				require.NoError(t, err)
				require.Equal(t, int64(i+1), n)
			}
			assert.Zero(t, pool.Started(), "calls ran on the caller's goroutine")

			// The server stops answering for longer than the call's bound.
			const bound = 300 * time.Millisecond
			require.NoError(t, admin.Do(testContext(t), "client", "pause", 1500, "all").Err())
			start := time.Now()
			reply := incr.With(1, "inline:"+c.name, 1).Retrying(ctx, conn.Of(client), bound)
			took := time.Since(start)
			t.Logf("%s: returned after %v: %v", c.name, took.Round(time.Millisecond), reply.Err())
			require.Error(t, reply.Err())
			assert.ErrorIs(t, reply.Err(), context.DeadlineExceeded)
			assert.Less(t, took, bound+100*time.Millisecond, "the call kept its bound")
			late := conn.AfterLate(reply.Err())
			require.NotNil(t, late, "the call goes on in the background")
			select {
			case <-late:
			case <-time.After(5 * time.Second):
				t.Fatal("the background call did not end")
			}
		})
	}
}
