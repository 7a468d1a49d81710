package conn_test

import (
	"context"
	"errors"
	"net"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/conn"
	"github.com/relock-go/relock/internal/testkit/redistest"
)

// A channel cancelled while its broken connection waits to be made again
// is not subscribed again with the others: its UNSUBSCRIBE finds no
// connection (the server is still down), or dials the new one itself
// (the server is back, a failover is over), whose SUBSCRIBE carries the
// others only. Subscribed once more, the channel is confirmed by its own
// reply, not left waiting for one that never comes.
func TestChannelCancelledWhileDisconnectedSubscribesAgain(t *testing.T) {
	t.Parallel()
	for _, backFirst := range []bool{true, false} {
		name := "server down at the cancel"
		if backFirst {
			name = "cancel dials the connection"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cancelledWhileDisconnected(t, backFirst)
		})
	}
}

func cancelledWhileDisconnected(t *testing.T, backFirst bool) {
	ctx := testContext(t)
	srv := redistest.StartServer(t)
	if srv == nil {
		t.Skip("no redis-server")
	}
	admin := srv.Client(t)
	var down atomic.Bool
	c := srv.Client(t, func(o *redis.Options) {
		o.Dialer = func(ctx context.Context, network, addr string) (net.Conn, error) {
			if down.Load() {
				return nil, errors.New("server unreachable")
			}
			var d net.Dialer
			return d.DialContext(ctx, network, addr)
		}
	})
	ps := conn.PubSubFor(conn.Of(c))
	// kept keeps the connection open once gone is cancelled.
	kept, gone := chanName(t, 0), chanName(t, 1)
	subscribeReady(t, ctx, ps, kept, newRecorder())
	rec := newRecorder()
	sub := subscribeReady(t, ctx, ps, gone, rec)

	down.Store(true)
	require.NoError(t, admin.Do(ctx, "client", "kill", "type", "pubsub").Err())
	// Each failed reconnect is heard as Broken, and the next comes after
	// a backoff that doubles from 10 ms: after the seventh, the transport
	// leaves the connection alone for 640 ms, so the cancel below and the
	// new subscription are the first to reach the server again.
	for range 7 {
		rec.waitFor(t, "broken", gone, "the connection broke, and its reconnects failed")
	}
	if backFirst {
		down.Store(false)
	}
	sub.Cancel()
	down.Store(false)

	again := subscribe(t, ctx, ps, gone, newRecorder())
	requireReady(t, again, "subscribed again after a cancel while disconnected")
}
