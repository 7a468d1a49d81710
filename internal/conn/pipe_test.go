package conn_test

import (
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/conn"
	"github.com/relock-go/relock/internal/testkit/redistest"
)

// counter records how the client sent: single commands and pipelines.
type counter struct {
	singles   atomic.Int64
	pipelines atomic.Int64
	maxBatch  atomic.Int64
	// gate, when set, holds every single command until it is closed, so a
	// test can make commands pile up behind the ones in flight.
	gate chan struct{}
}

func (c *counter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *counter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if cmd.Name() == "hello" || cmd.Name() == "client" {
			return next(ctx, cmd)
		}
		c.singles.Add(1)
		if c.gate != nil {
			<-c.gate
		}
		return next(ctx, cmd)
	}
}

func (c *counter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if n := cmds[0].Name(); n == "hello" || n == "client" || n == "auth" {
			return next(ctx, cmds) // the connection's handshake
		}
		c.pipelines.Add(1)
		for {
			cur := c.maxBatch.Load()
			if int64(len(cmds)) <= cur || c.maxBatch.CompareAndSwap(cur, int64(len(cmds))) {
				break
			}
		}
		return next(ctx, cmds)
	}
}

func clients(t *testing.T) map[string]*redis.Client {
	_, mini := redistest.Miniredis(t)
	out := map[string]*redis.Client{"miniredis": mini}
	if srv := redistest.StartServer(t); srv != nil {
		out["redis-server"] = srv.Client(t)
	}
	return out
}

func TestLoneCommandIsSentAtOnce(t *testing.T) {
	for name, rdb := range clients(t) {
		t.Run(name, func(t *testing.T) {
			c := &counter{}
			rdb.AddHook(c)
			p := conn.NewPipe(conn.Of(rdb), 2)
			for i := range 10 {
				cmd := conn.NewCmd(context.Background(), 1, "incr", "lone")
				require.NoError(t, p.Process(context.Background(), cmd))
				require.EqualValues(t, i+1, cmd.Reply().Val())
			}
			require.EqualValues(t, 10, c.singles.Load())
			require.Zero(t, c.pipelines.Load(), "an idle client pipelines nothing")
		})
	}
}

func TestBusyClientCoalescesIntoPipelines(t *testing.T) {
	for name, rdb := range clients(t) {
		t.Run(name, func(t *testing.T) {
			c := &counter{gate: make(chan struct{})}
			rdb.AddHook(c)
			p := conn.NewPipe(conn.Of(rdb), 1)
			const n = 50
			var wg sync.WaitGroup
			results := make([]int64, n)
			errs := make([]error, n)
			for i := range n {
				wg.Go(func() {
					cmd := conn.NewCmd(context.Background(), 1, "incr", fmt.Sprintf("k%d", i))
					errs[i] = p.Process(context.Background(), cmd)
					results[i], _ = cmd.Reply().Int64()
				})
			}
			// The first command is held in flight; the rest queue.
			require.Eventually(t, func() bool { return c.singles.Load() == 1 }, 5*time.Second, time.Millisecond)
			time.Sleep(50 * time.Millisecond) // let the others reach the queue
			close(c.gate)
			wg.Wait()
			for i := range n {
				require.NoError(t, errs[i])
				require.EqualValues(t, 1, results[i], "each command ran once, with its own reply")
			}
			require.GreaterOrEqual(t, c.maxBatch.Load(), int64(2), "queued commands went as a pipeline")
			require.Less(t, c.singles.Load()+c.pipelines.Load(), int64(n), "fewer round trips than commands")
		})
	}
}

func TestSenderContextEndingDoesNotFailOthers(t *testing.T) {
	rdb := clients(t)["miniredis"]
	c := &counter{gate: make(chan struct{})}
	rdb.AddHook(c)
	p := conn.NewPipe(conn.Of(rdb), 1)

	first := make(chan error, 1)
	go func() { first <- p.Process(context.Background(), conn.NewCmd(context.Background(), 1, "incr", "a")) }()
	require.Eventually(t, func() bool { return c.singles.Load() == 1 }, 5*time.Second, time.Millisecond)

	// The second queues first, so it will send the batch; its context is
	// already cancelled when it does.
	cancelled, cancel := context.WithCancel(context.Background())
	second, third := make(chan conn.Cmd, 1), make(chan conn.Cmd, 1)
	go func() {
		cmd := conn.NewCmd(cancelled, 1, "incr", "b")
		_ = p.Process(cancelled, cmd)
		second <- cmd
	}()
	time.Sleep(20 * time.Millisecond)
	go func() {
		cmd := conn.NewCmd(context.Background(), 1, "incr", "c")
		_ = p.Process(context.Background(), cmd)
		third <- cmd
	}()
	time.Sleep(20 * time.Millisecond)
	cancel()
	close(c.gate)
	require.NoError(t, <-first)
	for _, ch := range []chan conn.Cmd{second, third} {
		cmd := <-ch
		require.NoError(t, cmd.Reply().Err())
		require.EqualValues(t, 1, cmd.Reply().Val())
	}
}

func TestClusterClientSendsDirectly(t *testing.T) {
	cc := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs: []string{"127.0.0.1:1"},
		Dialer: func(context.Context, string, string) (net.Conn, error) {
			return nil, fmt.Errorf("no cluster here")
		},
	})
	t.Cleanup(func() { _ = cc.Close() })
	require.Same(t, conn.PipeFor(conn.Of(cc)), conn.PipeFor(conn.Of(cc)), "one Pipe per client")
	err := conn.PipeFor(conn.Of(cc)).Process(context.Background(), conn.NewCmd(context.Background(), 1, "incr", "x"))
	require.Error(t, err, "the cluster client's own error comes back")
}
