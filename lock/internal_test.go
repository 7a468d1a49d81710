package lock

import (
	"context"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/conn"
	"github.com/relock-go/relock/internal/core"
	"github.com/relock-go/relock/internal/scripts"
	"github.com/relock-go/relock/internal/testkit/redistest"
)

// TestUnlockRetryDoesNotDecrementTwice replays an unlock with the same
// request id, as runUnlock does when the first reply was lost.
func TestUnlockRetryDoesNotDecrementTwice(t *testing.T) {
	for _, b := range redistest.AllBackends() {
		t.Run(b.Name, func(t *testing.T) {
			env := b.New(t)
			ctx := context.Background()
			mu := New(env.Universal, "latch")
			held, err := mu.Lock(ctx)
			require.NoError(t, err)
			inner, err := mu.Lock(held)
			require.NoError(t, err)
			id, _ := core.Owner(held)

			latch := scripts.Prefix("redisson_unlock_latch", "latch") + ":req-1"
			run := func() int64 {
				res, err := unlockScript.With(3, "latch", mu.channel, latch, unlockMessage, int64(30000), id, mu.hub.PublishCommand(), int64(10000)).Run(ctx, conn.Of(env.Universal)).Int64()
				require.NoError(t, err)
				return res
			}
			require.EqualValues(t, 0, run(), "2 -> 1")
			require.EqualValues(t, 0, run(), "the retry reads the latch")
			n, err := mu.HoldCount(held)
			require.NoError(t, err)
			require.Equal(t, 1, n, "decremented once")
			pttl := env.Universal.PTTL(ctx, latch).Val()
			require.Greater(t, pttl, time.Duration(0), "the latch expires by itself")

			// Bookkeeping: the replayed release stands for inner's.
			h, _, err := core.Detach(inner, mu.key(), &mu.holds)
			require.NoError(t, err)
			require.False(t, h.Lease.Release(), "the outer hold keeps the lease")
			h.Close()
			require.NoError(t, mu.Unlock(held))
			locked, _ := mu.IsLocked(ctx)
			require.False(t, locked)
		})
	}
}

// TestNoRenewalAfterUnlock counts renewal scripts on the wire: none is
// sent once Unlock has returned.
func TestNoRenewalAfterUnlock(t *testing.T) {
	srv := redistest.StartServer(t)
	rdb := srv.Client(t)
	var renewals atomic.Int64
	rdb.AddHook(countHook{sha: renewer.Lua.Hash(), n: &renewals})
	ctx := context.Background()
	const timeout = 90 * time.Millisecond // renewed every 30 ms
	for range 20 {
		mu := New(rdb, "norenew", WithWatchdogTimeout(timeout))
		held, err := mu.Lock(ctx)
		require.NoError(t, err)
		time.Sleep(timeout / 2)
		require.NoError(t, mu.Unlock(held))
		after := renewals.Load()
		time.Sleep(timeout)
		require.Equal(t, after, renewals.Load(), "a renewal was sent after Unlock returned")
	}
	require.Positive(t, renewals.Load(), "the hook sees renewals at all")
}

type countHook struct {
	sha string
	n   *atomic.Int64
}

func (h countHook) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) { return next(ctx, network, addr) }
}

func (h countHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (h countHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, c := range cmds {
			if args := c.Args(); len(args) > 1 && strings.EqualFold(args[0].(string), "evalsha") && args[1] == h.sha {
				h.n.Add(1)
			}
		}
		return next(ctx, cmds)
	}
}
