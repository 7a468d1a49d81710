package conn_test

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
	"weak"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/conn"
	"github.com/relock-go/relock/internal/testkit/redistest"
)

// A call with a deadline on a default client (no ContextTimeoutEnabled)
// ends at its deadline on the caller's goroutine, and a call without one
// waits as the client's own calls do.
func TestDefaultClientCallEndsAtItsDeadline(t *testing.T) {
	s := redistest.StartServer(t)
	rdb := s.Client(t)
	c := conn.Of(rdb)
	ctx := context.Background()
	require.NoError(t, rdb.Do(ctx, "client", "pause", 1500, "all").Err())

	dctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := c.Do(dctx, "get", "k").Err()
	waited := time.Since(start)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Less(t, waited, time.Second, "the call ended at its deadline, not at the pause's end")

	start = time.Now()
	require.ErrorIs(t, c.Do(ctx, "get", "k").Err(), redis.Nil)
	require.Greater(t, time.Since(start)+waited, time.Second, "a call without a deadline waited for the pause")
	require.False(t, rdb.Options().ContextTimeoutEnabled, "the user's client is unchanged")
}

// A pipeline with a deadline on a default client ends at its deadline too,
// and a transaction keeps its replies.
func TestDefaultClientPipelineEndsAtItsDeadline(t *testing.T) {
	s := redistest.StartServer(t)
	rdb := s.Client(t)
	c := conn.Of(rdb)
	ctx := context.Background()
	// A transaction marked for the twin goes on as one.
	tctx, tcancel := context.WithTimeout(ctx, 5*time.Second)
	defer tcancel()
	tctx = conn.Timed(tctx, rdb)
	tx, err := rdb.TxPipelined(tctx, func(p redis.Pipeliner) error {
		p.Set(tctx, "k", "v", 0)
		p.Get(tctx, "k")
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, "v", tx[1].(*redis.StringCmd).Val())
	require.NoError(t, rdb.Do(ctx, "client", "pause", 1500, "all").Err())

	dctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	replies := c.Pipelined(dctx, []any{"get", "k"}, []any{"get", "j"})
	waited := time.Since(start)
	require.True(t, conn.Timeout(replies[0].Err()), "%v", replies[0].Err())
	require.Less(t, waited, time.Second, "the pipeline ended at its deadline, not at the pause's end")

	replies = c.Pipelined(ctx, []any{"get", "k"}, []any{"get", "j"})
	v, err := replies[0].Text()
	require.NoError(t, err)
	require.Equal(t, "v", v)
	require.ErrorIs(t, replies[1].Err(), redis.Nil)
}

type countHook struct{ n atomic.Int32 }

func (*countHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *countHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if _, ok := cmd.(*redis.Cmd); ok { // the command itself, not a wrapper
			h.n.Add(1)
		}
		return next(ctx, cmd)
	}
}
func (*countHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// The client's hooks see the calls sent on its twin, as the commands
// themselves, those added after the twin was made as well.
func TestTwinCallsGoThroughTheClientsHooks(t *testing.T) {
	for _, b := range redistest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			env := b.New(t)
			c := conn.Of(env.Client)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			before, after := &countHook{}, &countHook{}
			env.Client.AddHook(before)
			require.NoError(t, c.Do(ctx, "set", "k", "v").Err())
			env.Client.AddHook(after)
			require.NoError(t, c.Do(ctx, "set", "k", "w").Err())
			v, err := c.Do(ctx, "get", "k").Text()
			require.NoError(t, err)
			require.Equal(t, "w", v)
			require.NoError(t, env.Client.Do(ctx, "set", "u", "1").Err())
			require.EqualValues(t, 4, before.n.Load())
			require.EqualValues(t, 3, after.n.Load())
		})
	}
}

// The twin's hook stays the client's one while go-redis builds chains with
// it that add no hook inside (a Conn of the client, an autopipelined
// command), and is added anew only after a hook is added to the client.
func TestTwinHookIsAddedOnlyAfterAnotherHook(t *testing.T) {
	s := redistest.StartServer(t)
	rdb := s.Client(t)
	c := conn.Of(rdb)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, c.Do(ctx, "ping").Err())
	hook := conn.TwinHook(rdb)
	require.NotNil(t, hook)
	for range 20 {
		cn := rdb.Conn()
		require.NoError(t, cn.Ping(ctx).Err())
		require.NoError(t, cn.Close())
		require.NoError(t, c.Do(ctx, "ping").Err())
	}
	require.Same(t, hook, conn.TwinHook(rdb), "a Conn of the client added a hook")
	after := &countHook{}
	rdb.AddHook(after)
	require.NoError(t, c.Do(ctx, "ping").Err())
	require.NotSame(t, hook, conn.TwinHook(rdb), "a hook added later sees our calls")
	require.EqualValues(t, 1, after.n.Load())
}

// A twin does not keep its client alive.
func TestTwinGoesWithItsClient(t *testing.T) {
	s := redistest.StartServer(t)
	var gone weak.Pointer[redis.Client]
	func() {
		rdb := redis.NewClient(&redis.Options{Addr: s.Addr})
		gone = weak.Make(rdb)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		require.False(t, conn.HasTwin(rdb))
		require.NoError(t, conn.Of(rdb).Do(ctx, "ping").Err())
		require.True(t, conn.HasTwin(rdb), "a call with a deadline made the twin")
		require.NoError(t, rdb.Close())
	}()
	require.Eventually(t, func() bool {
		runtime.GC()
		return gone.Value() == nil
	}, 10*time.Second, 10*time.Millisecond, "the dropped client was collected")
}
