package redlock_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/lock"
	"github.com/relock-go/relock/redlock"
	"github.com/relock-go/relock/watchdog"
)

// afterScript runs a function once, after the next script call through
// the client it hooks has run, before its reply reaches the caller.
type afterScript struct{ fn atomic.Pointer[func()] }

func (h *afterScript) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *afterScript) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, c redis.Cmder) error {
		err := next(ctx, c)
		if name := c.Name(); name == "evalsha" || name == "eval" {
			if fn := h.fn.Swap(nil); fn != nil {
				(*fn)()
			}
		}
		return err
	}
}

func (h *afterScript) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// TestRoundLapsedOnArrivalRefused: a round whose quorum came back in its
// validity time by the local clock but after its lease by the watchdog's
// (a clock step between the two readings) makes no hold: a TryLock
// returns ErrLockLost with every member given back, and a Lock goes on
// to a round of its own.
func TestRoundLapsedOnArrivalRefused(t *testing.T) {
	ctx := ctxT(t)
	ms := startMasters(t, 3)
	cs := ms.process(t)
	hook := &afterScript{}
	cs[0].AddHook(hook)
	clk := watchdog.NewFakeClock(time.Unix(1_700_000_000, 0))
	// The wheel's goroutine sleeps on the fake clock: moved on at the end,
	// it finds the wheel empty and ends.
	t.Cleanup(func() { clk.Advance(time.Hour) })
	wd := watchdog.New(watchdog.WithClock(clk))
	members := make([]redlock.Member, len(cs))
	for i, c := range cs {
		members[i] = lock.New(c, "lapsed", lock.WithWatchdog(wd))
	}
	rl := redlock.New(members, redlock.WithWatchdog(wd), redlock.WithLeaseTime(10*time.Second))
	step := func() { clk.Advance(time.Minute) }

	hook.fn.Store(&step)
	_, err := rl.TryLock(ctx)
	require.ErrorIs(t, err, redlock.ErrLockLost)
	require.ErrorContains(t, err, "lapsed before the grant's reply arrived")
	require.NoError(t, rl.Drain(ctx))
	require.Equal(t, zeros(3), ms.existsOn(t, "lapsed", ms.all()...), "every member given back")

	hook.fn.Store(&step)
	held, err := rl.Lock(ctx)
	require.NoError(t, err, "the next round holds it")
	require.Equal(t, ones(3), ms.existsOn(t, "lapsed", ms.all()...))
	require.NoError(t, rl.Unlock(held))
	require.Zero(t, wd.Stats().Held)
}
