package redlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/redlock"
)

// TTL is the validity a quorum of members still gives the lock.
func TestTTLIsTheQuorumsValidity(t *testing.T) {
	ms := startMasters(t, 3)
	ctx := ctxT(t)
	rl := redlock.New(mutexes(ms.process(t), "ttl"))
	ttl, err := rl.TTL(ctx)
	require.NoError(t, err)
	require.Zero(t, ttl, "free")

	held, err := rl.Lock(ctx)
	require.NoError(t, err)
	ttl, err = rl.TTL(ctx)
	require.NoError(t, err)
	require.True(t, ttl > 20*time.Second && ttl < 30*time.Second, "ttl %v", ttl)

	// One member gone: the other two are still a quorum.
	require.NoError(t, ms.admins[0].Del(ctx, "ttl").Err())
	ttl, err = rl.TTL(ctx)
	require.NoError(t, err)
	require.Positive(t, ttl)
	// Two gone: no quorum holds it.
	require.NoError(t, ms.admins[1].Del(ctx, "ttl").Err())
	ttl, err = rl.TTL(ctx)
	require.NoError(t, err)
	require.Zero(t, ttl)
	_ = rl.Unlock(held)
	require.NoError(t, rl.Drain(ctx))

	var zero redlock.Lock
	_, err = zero.TTL(context.Background())
	require.ErrorIs(t, err, redlock.ErrInvalidArgument)
}
