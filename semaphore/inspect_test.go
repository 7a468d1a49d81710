package semaphore_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/semaphore"
)

func TestTTLAndForceRelease(t *testing.T) {
	each(t, func(t *testing.T, env *env) {
		ctx := ctxT(t)
		s := semaphore.New(env.Universal, "insp", 4)
		ttl, err := s.TTL(ctx)
		require.NoError(t, err)
		require.Zero(t, ttl, "ctx carries no hold")

		held, err := s.Acquire(ctx, 3)
		require.NoError(t, err)
		ttl, err = s.TTL(held)
		require.NoError(t, err)
		require.True(t, ttl > 25*time.Second && ttl <= 30*time.Second, "ttl %v", ttl)

		ok, err := semaphore.New(env.Universal, "insp", 4).ForceRelease(ctx)
		require.NoError(t, err)
		require.True(t, ok)
		select {
		case <-held.Done():
			require.ErrorIs(t, context.Cause(held), semaphore.ErrLockLost)
		case <-time.After(time.Second):
			t.Fatal("the holder did not learn of the ForceRelease at once")
		}
		require.Equal(t, int64(4), available(t, s), "every permit free")
		ttl, err = s.TTL(held)
		require.NoError(t, err)
		require.Zero(t, ttl, "the permits are gone")
		require.ErrorIs(t, s.Release(held), semaphore.ErrLockLost)

		again, err := s.TryAcquire(ctx, 4)
		require.NoError(t, err, "the size record stayed, the permits are all free")
		require.NoError(t, s.Release(again))
	})
}

func TestForceReleaseRefusesBadInput(t *testing.T) {
	var zero semaphore.Semaphore
	_, err := zero.ForceRelease(context.Background())
	require.ErrorIs(t, err, semaphore.ErrInvalidArgument)
	_, err = semaphore.New(nil, "x", 1).TTL(context.Background())
	require.ErrorIs(t, err, semaphore.ErrInvalidArgument)
}

func TestExtend(t *testing.T) {
	each(t, func(t *testing.T, env *env) {
		ctx := ctxT(t)
		s := semaphore.New(env.Universal, "ext", 2, semaphore.WithLeaseTime(time.Second))
		held, err := s.Acquire(ctx, 1)
		require.NoError(t, err)
		require.NoError(t, s.Extend(held, 10*time.Second))
		ttl, err := s.TTL(held)
		require.NoError(t, err)
		require.True(t, ttl > 9*time.Second, "ttl %v", ttl)
		left, _ := semaphore.Remaining(held)
		require.True(t, left > 9*time.Second, "remaining %v", left)
		require.ErrorIs(t, s.Extend(held, -time.Second), semaphore.ErrInvalidArgument)
		require.NoError(t, s.Release(held))
		require.ErrorIs(t, s.Extend(held, time.Second), semaphore.ErrNotHeld)
	})
}

func TestPerCallOptions(t *testing.T) {
	each(t, func(t *testing.T, env *env) {
		ctx := ctxT(t)
		s := semaphore.New(env.Universal, "pc", 2)
		held, err := s.Acquire(ctx, 2, semaphore.WithLeaseTime(5*time.Second))
		require.NoError(t, err)
		require.NoError(t, s.Extend(held, 6*time.Second), "a fixed lease for this hold")
		_, err = s.Acquire(ctx, 1, semaphore.WithWaitTimeout(50*time.Millisecond))
		require.ErrorIs(t, err, semaphore.ErrNotAcquired)
		_, err = s.TryAcquire(ctx, 1, semaphore.WithWaitTimeout(0))
		require.ErrorIs(t, err, semaphore.ErrInvalidArgument)
		_, perCall := semaphore.WithMeterProvider(nil).(semaphore.AcquireOption)
		require.False(t, perCall, "the meter provider configures the Semaphore: Acquire does not compile with it")
		require.NoError(t, s.Release(held))
	})
}

// A rolling deploy that changes the size: the new processes, built with
// WithRecordedSize, use the size Redis records while the old ones hold
// permits, and write their own once the semaphore has gone idle; without
// it they fail with ErrSizeMismatch.
func TestRecordedSizeAcrossADeploy(t *testing.T) {
	each(t, func(t *testing.T, env *env) {
		ctx := ctxT(t)
		old := semaphore.New(env.Universal, "deploy", 2)
		strictNew := semaphore.New(env.secondClient(t), "deploy", 4)
		adopting := semaphore.New(env.secondClient(t), "deploy", 4, semaphore.WithRecordedSize())

		a, err := old.Acquire(ctx, 1)
		require.NoError(t, err)
		_, err = strictNew.TryAcquire(ctx, 1)
		require.ErrorIs(t, err, semaphore.ErrSizeMismatch)

		b, err := adopting.TryAcquire(ctx, 1)
		require.NoError(t, err, "the recorded size, 2, has one permit left")
		_, err = adopting.TryAcquire(ctx, 1)
		require.ErrorIs(t, err, semaphore.ErrNotAcquired, "2 of the recorded 2 are held")
		free, err := adopting.Available(ctx)
		require.NoError(t, err)
		require.Zero(t, free)
		_, err = adopting.TryAcquire(ctx, 3)
		require.ErrorIs(t, err, semaphore.ErrInvalidArgument, "more than the recorded size")
		require.Equal(t, int64(4), adopting.Size(), "Size is what it was built with")

		require.NoError(t, old.Release(a))
		require.NoError(t, adopting.Release(b))
		// Idle now: the keys are gone, and the next acquisition records
		// its own size.
		c, err := adopting.TryAcquire(ctx, 3)
		require.NoError(t, err, "the new size, 4, is recorded")
		_, err = old.TryAcquire(ctx, 1)
		require.ErrorIs(t, err, semaphore.ErrSizeMismatch, "an old process without the option now disagrees")
		require.NoError(t, adopting.Release(c))
	})
}

// A permit's holder label lives beside it and goes with it; a labeled
// contender is told who holds the permits.
func TestHolderLabel(t *testing.T) {
	each(t, func(t *testing.T, env *env) {
		ctx := ctxT(t)
		s := semaphore.New(env.Universal, "lab", 2, semaphore.WithHolderLabel("pod-7"))
		held, err := s.Acquire(ctx, 2)
		require.NoError(t, err)
		labels, err := env.Universal.Keys(ctx, "relock_holder:*").Result()
		if env.Mini != nil || err == nil && len(labels) > 0 { // a cluster scans one node
			require.Len(t, labels, 1)
		}
		_, err = semaphore.New(env.Universal, "lab", 2, semaphore.WithHolderLabel("pod-8")).TryAcquire(ctx, 1)
		require.ErrorIs(t, err, semaphore.ErrNotAcquired)
		require.Contains(t, err.Error(), "held by pod-7 for ")
		require.NoError(t, s.Release(held))
		if len(labels) > 0 {
			require.Zero(t, env.Universal.Exists(ctx, labels...).Val(), "the label went with the permits")
		}
		_, err = semaphore.New(env.Universal, "lab", 2, semaphore.WithHolderLabel("pod-8")).TryAcquire(ctx, 3)
		require.ErrorIs(t, err, semaphore.ErrInvalidArgument)
	})
}
