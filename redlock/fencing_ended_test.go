package redlock_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/lock"
	"github.com/relock-go/relock/redlock"
)

// A Redlock's hold that has ended answers no fencing token.
func TestFencingTokenEndsWithHold(t *testing.T) {
	ms := startMasters(t, 3)
	ctx := ctxT(t)
	rl := redlock.New(mutexes(ms.process(t), "fence:rl"))
	held, err := rl.Lock(ctx)
	require.NoError(t, err)
	_, ok := rl.FencingToken(held)
	require.True(t, ok)
	require.NoError(t, rl.Unlock(held))
	tok, ok := rl.FencingToken(held)
	require.False(t, ok, "Lock.FencingToken after Unlock (got %d)", tok)
	tok, ok = lock.FencingToken(held)
	require.False(t, ok, "lock.FencingToken after Unlock (got %d)", tok)
	_, ok = rl.FencingToken(ctx)
	require.False(t, ok)
}
