package redlock_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/testkit/redistest"
	"github.com/relock-go/relock/lock"
	"github.com/relock-go/relock/redlock"
	"github.com/relock-go/relock/watchdog"
)

// TestRoundLapsedOnArrivalRefused: a round whose quorum came back in its
// validity time by the local clock but after its lease by the watchdog's
// (a clock step between the two readings) makes no hold: a TryLock
// returns ErrLockLost with every member given back, and a Lock goes on
// to a round of its own.
func TestRoundLapsedOnArrivalRefused(t *testing.T) {
	ctx := ctxT(t)
	ms := startMasters(t, 3)
	cs := ms.process(t)
	hook := redistest.NewScriptFaults() // every script
	cs[0].AddHook(hook)
	clk := redistest.FakeClock(t)
	wd := watchdog.New(watchdog.WithClock(clk))
	members := make([]redlock.Member, len(cs))
	for i, c := range cs {
		members[i] = lock.New(c, "lapsed", lock.WithWatchdog(wd))
	}
	rl := redlock.New(members, redlock.WithWatchdog(wd), redlock.WithLeaseTime(10*time.Second))
	step := func() { clk.Advance(time.Minute) }

	hook.AfterNext(step)
	_, err := rl.TryLock(ctx)
	require.ErrorIs(t, err, redlock.ErrLockLost)
	require.ErrorContains(t, err, "lapsed before the grant's reply arrived")
	require.NoError(t, rl.Drain(ctx))
	require.Equal(t, zeros(3), ms.existsOn(t, "lapsed", ms.all()...), "every member given back")

	hook.AfterNext(step)
	held, err := rl.Lock(ctx)
	require.NoError(t, err, "the next round holds it")
	require.Equal(t, ones(3), ms.existsOn(t, "lapsed", ms.all()...))
	require.NoError(t, rl.Unlock(held))
	require.Zero(t, wd.Stats().Held)
}
