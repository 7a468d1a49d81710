package conn_test

import (
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/conn"
	"github.com/relock-go/relock/internal/testkit/redistest"
)

// A sharded connection that breaks is subscribed again to every channel:
// go-redis sends all of a connection's channels in one SSUBSCRIBE, which
// the server refuses (CROSSSLOT) when they sit in different slots, as
// the channels of different locks do.
func TestBrokenShardedConnectionResubscribesEveryChannel(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	cc, servers := redistest.StartCluster(t, 3)
	ps := conn.PubSubFor(conn.Of(cc))
	var chs []string
	addr := ""
	for i := 0; len(chs) < 3 && i < 10000; i++ {
		ch := fmt.Sprintf("redisson_lock__channel:{resub:%d}", i)
		node, err := cc.MasterForKey(ctx, ch)
		require.NoError(t, err)
		if addr == "" {
			addr = node.Options().Addr
		}
		if node.Options().Addr == addr && (len(chs) == 0 || conn.Slot(chs[len(chs)-1]) != conn.Slot(ch)) {
			chs = append(chs, ch)
		}
	}
	require.Len(t, chs, 3)
	var admin *redis.Client
	for _, s := range servers {
		if s.Addr == addr {
			admin = s.Client(t)
		}
	}
	require.NotNil(t, admin)
	recs := map[string]*recorder{}
	for _, ch := range chs {
		recs[ch] = newRecorder()
		subscribeReady(t, ctx, ps, ch, recs[ch])
	}
	require.NoError(t, admin.Do(ctx, "client", "kill", "type", "pubsub").Err())
	for _, ch := range chs {
		recs[ch].waitFor(t, "missed", ch, "subscribed again after the connection broke")
	}
	for _, ch := range chs {
		n, err := cc.SPublish(ctx, ch, "after").Result()
		require.NoError(t, err)
		require.Equal(t, int64(1), n, "SPUBLISH %s reached the transport", ch)
		recs[ch].requireMessage(t, ch, "after", ch)
	}
}
