package redlock_test

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/redlock"
)

// A Redlock's lease or extension past a day is refused, before anything
// is written to any member.
func TestLeaseOverADayRefused(t *testing.T) {
	ms := startMasters(t, 3)
	ctx := ctxT(t)
	for _, d := range []time.Duration{24*time.Hour + time.Millisecond, math.MaxInt64} {
		_, err := redlock.New(mutexes(ms.process(t), "day"), redlock.WithLeaseTime(d)).Lock(ctx)
		require.ErrorIs(t, err, redlock.ErrInvalidArgument, d.String())
		_, err = redlock.New(mutexes(ms.process(t), "day")).TryLock(ctx, redlock.WithWatchdogTimeout(d))
		require.ErrorIs(t, err, redlock.ErrInvalidArgument, d.String())
	}
	require.Equal(t, zeros(3), ms.existsOn(t, "day", ms.all()...), "nothing written")

	rl := redlock.New(mutexes(ms.process(t), "day"), redlock.WithLeaseTime(time.Minute))
	held, err := rl.Lock(ctx)
	require.NoError(t, err)
	err = rl.Extend(held, math.MaxInt64)
	require.ErrorIs(t, err, redlock.ErrInvalidArgument)
	require.ErrorContains(t, err, "extend")
	require.NoError(t, rl.Unlock(held))
}
