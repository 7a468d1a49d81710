package redlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/lock"
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

// Extend moves a fixed lease's end on every member; a quorum is enough.
func TestExtend(t *testing.T) {
	ms := startMasters(t, 3)
	ctx := ctxT(t)
	rl := redlock.New(mutexes(ms.process(t), "ext"), redlock.WithLeaseTime(2*time.Second))
	held, err := rl.Lock(ctx)
	require.NoError(t, err)
	require.NoError(t, ms.admins[0].Del(ctx, "ext").Err()) // one member lost: a quorum remains
	require.NoError(t, rl.Extend(held, 20*time.Second))
	for _, i := range []int{1, 2} {
		ttl := ms.admins[i].PTTL(ctx, "ext").Val()
		require.True(t, ttl > 19*time.Second, "member %d ttl %v", i, ttl)
	}
	left, _ := redlock.Remaining(held)
	require.True(t, left > 15*time.Second, "remaining %v", left)

	require.NoError(t, ms.admins[1].Del(ctx, "ext").Err()) // now no quorum holds it
	require.ErrorIs(t, rl.Extend(held, 20*time.Second), redlock.ErrLockLost)
	<-held.Done()
	_ = rl.Unlock(held)
	require.NoError(t, rl.Drain(ctx))
}

func TestPerCallOptions(t *testing.T) {
	ms := startMasters(t, 3)
	ctx := ctxT(t)
	rl := redlock.New(mutexes(ms.process(t), "pc"))
	held, err := rl.Lock(ctx, redlock.WithLeaseTime(5*time.Second))
	require.NoError(t, err)
	require.NoError(t, rl.Extend(held, 6*time.Second), "a fixed lease for this hold")
	ttl := ms.admins[0].PTTL(ctx, "pc").Val()
	require.True(t, ttl > 5*time.Second && ttl <= 6*time.Second, "ttl %v", ttl)
	_, err = redlock.New(mutexes(ms.process(t), "pc")).Lock(ctx, redlock.WithWaitTimeout(100*time.Millisecond))
	require.ErrorIs(t, err, redlock.ErrNotAcquired)
	_, err = rl.TryLock(ctx, redlock.WithLeaseTime(0))
	require.ErrorIs(t, err, redlock.ErrInvalidArgument)
	_, perCall := redlock.WithNodeTimeout(time.Second).(redlock.LockOption)
	require.False(t, perCall, "the node timeout configures the Lock: TryLock does not compile with it")
	require.NoError(t, rl.Unlock(held))
	require.NoError(t, rl.Drain(ctx))
}

// A holder label is not kept by a Redlock, which does not offer it: the
// option of a member's package does not satisfy a Redlock's.
func TestHolderLabelRefused(t *testing.T) {
	_, isRedlock := lock.WithHolderLabel("pod-7").(redlock.LockOption)
	require.False(t, isRedlock)
}

// A paused member does not hold an Extend back: the quorum decides, and a
// per-call lease shorter than New's keeps room for its validity.
func TestExtendWithAPausedMemberAndShortPerCallLease(t *testing.T) {
	ms := startMasters(t, 3)
	ctx := ctxT(t)
	rl := redlock.New(mutexes(ms.process(t), "paused"), redlock.WithLeaseTime(5*time.Second))
	held, err := rl.Lock(ctx)
	require.NoError(t, err)
	require.NoError(t, ms.admins[0].Do(ctx, "CLIENT", "PAUSE", "3000", "ALL").Err())
	t.Cleanup(func() { _ = ms.admins[0].Do(context.Background(), "CLIENT", "UNPAUSE").Err() })
	began := time.Now()
	require.NoError(t, rl.Extend(held, 20*time.Second))
	require.Less(t, time.Since(began), 2500*time.Millisecond, "decided by the quorum, not the paused member")
	require.NoError(t, held.Err())
	require.NoError(t, ms.admins[0].Do(ctx, "CLIENT", "UNPAUSE").Err())
	require.NoError(t, rl.Unlock(held))
	require.NoError(t, rl.Drain(ctx))

	sl := redlock.New(mutexes(ms.process(t), "short"))
	short, err := sl.TryLock(ctx, redlock.WithLeaseTime(250*time.Millisecond))
	require.NoError(t, err, "the drift and node timeout follow the call's lease")
	_ = sl.Unlock(short) // the 250 ms lease may have ended already
	require.NoError(t, sl.Drain(ctx))
}
