package redlock_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/redlock"
)

// TestShortWaitTimeoutTakesFreeMembers: the first round is made whatever
// the wait bound, as a lock's first try is: a bound shorter than a round
// trip does not refuse free members.
func TestShortWaitTimeoutTakesFreeMembers(t *testing.T) {
	ms := startMasters(t, 3)
	ctx := ctxT(t)
	rl := redlock.New(mutexes(ms.process(t), "short-wait"), redlock.WithWaitTimeout(time.Microsecond))
	held, err := rl.Lock(ctx)
	require.NoError(t, err)
	taken := 0
	for _, n := range ms.existsOn(t, "short-wait", ms.all()...) {
		taken += int(n)
	}
	require.GreaterOrEqual(t, taken, rl.Quorum(), "a quorum of members taken")
	require.NoError(t, rl.Unlock(held))
	require.NoError(t, rl.Drain(ctx))
	require.Equal(t, zeros(3), ms.existsOn(t, "short-wait", ms.all()...))
}
