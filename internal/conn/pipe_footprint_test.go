package conn_test

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/conn"
	"github.com/relock-go/relock/internal/testkit/redistest"
)

// TestClosedClientsLeaveNothing makes, uses and closes 10,000 clients:
// once they are dropped their Pipes are gone and the heap comes back.
func TestClosedClientsLeaveNothing(t *testing.T) {
	for _, b := range redistest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			env := b.New(t)
			addr := env.Client.Options().Addr
			ctx := context.Background()
			before := conn.Pipes()
			var ms runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&ms)
			heap := ms.HeapAlloc

			const clients = 10000
			for range clients {
				c := redis.NewClient(&redis.Options{Addr: addr})
				p := conn.PipeFor(conn.Of(c))
				require.Same(t, p, conn.PipeFor(conn.Of(c)), "one Pipe per client")
				cmd := conn.NewCmd(ctx, 0, "ping")
				require.NoError(t, p.Process(ctx, cmd))
				require.Equal(t, "PONG", cmd.Reply().Val())
				require.NoError(t, c.Close())
			}
			require.Eventually(t, func() bool {
				runtime.GC()
				return conn.Pipes() <= before
			}, 30*time.Second, 10*time.Millisecond, "the Pipes of dropped clients are gone")
			runtime.GC()
			runtime.ReadMemStats(&ms)
			grown := int64(ms.HeapAlloc) - int64(heap)
			t.Logf("%d clients made, used and dropped: heap %+d B", clients, grown)
			require.Less(t, grown, int64(4<<20), "the heap came back")
		})
	}
}
