package rwlock_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/core"
	"github.com/relock-go/relock/internal/scripts"
	"github.com/relock-go/relock/internal/testkit/redistest"
	"github.com/relock-go/relock/lock"
	"github.com/relock-go/relock/rwlock"
)

func TestInspection(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		rw := rwlock.New(env.Universal, "insp")
		locked, err := rw.IsLocked(ctx)
		require.NoError(t, err)
		require.False(t, locked)
		ttl, err := rw.TTL(ctx)
		require.NoError(t, err)
		require.Zero(t, ttl, "a free lock has no TTL")

		r1, err := rw.RLock(ctx)
		require.NoError(t, err)
		r2, err := rw.RLock(r1) // a re-entry
		require.NoError(t, err)
		reads, writes, err := rw.HoldCount(r2)
		require.NoError(t, err)
		require.Equal(t, [2]int{2, 0}, [2]int{reads, writes})
		reads, writes, err = rw.HoldCount(ctx) // no hold in ctx
		require.NoError(t, err)
		require.Equal(t, [2]int{0, 0}, [2]int{reads, writes})
		locked, err = rw.IsLocked(ctx)
		require.NoError(t, err)
		require.True(t, locked)
		ttl, err = rw.TTL(ctx)
		require.NoError(t, err)
		require.True(t, ttl > 0 && ttl <= 30*time.Second, "ttl %v", ttl)
		require.NoError(t, rw.RUnlock(r2))
		require.NoError(t, rw.RUnlock(r1))

		w, err := rw.Lock(ctx)
		require.NoError(t, err)
		reads, writes, err = rw.HoldCount(w)
		require.NoError(t, err)
		require.Equal(t, [2]int{0, 1}, [2]int{reads, writes})
		require.NoError(t, rw.Unlock(w))
	})
}

// ForceUnlock frees the lock whoever holds it, readers' lease keys
// included, and a holder of this process learns of it at once.
func TestForceUnlock(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		rw := rwlock.New(env.Universal, "force")
		r, err := rw.RLock(ctx)
		require.NoError(t, err)
		id, _ := core.Owner(r)
		leaseKey := scripts.ReadTimeout("force", id, 1)
		require.Equal(t, int64(1), env.Universal.Exists(ctx, leaseKey).Val())

		ok, err := rwlock.New(env.Universal, "force").ForceUnlock(ctx)
		require.NoError(t, err)
		require.True(t, ok)
		select {
		case <-r.Done():
			require.ErrorIs(t, context.Cause(r), rwlock.ErrLockLost)
		case <-time.After(time.Second):
			t.Fatal("the holder did not learn of the ForceUnlock at once")
		}
		require.Equal(t, int64(0), env.Universal.Exists(ctx, "force", leaseKey).Val(), "hash and lease key gone")
		require.ErrorIs(t, rw.RUnlock(r), rwlock.ErrLockLost)

		w, err := rw.TryLock(ctx) // free for anyone now
		require.NoError(t, err)
		require.NoError(t, rw.Unlock(w))
		ok, err = rw.ForceUnlock(ctx)
		require.NoError(t, err)
		require.False(t, ok, "nothing held")

		// A name that is a plain lock is left alone.
		mu := lock.New(env.Universal, "plain")
		held, err := mu.Lock(ctx)
		require.NoError(t, err)
		_, err = rwlock.New(env.Universal, "plain").ForceUnlock(ctx)
		require.True(t, errors.Is(err, core.ErrChanged), "%v", err)
		require.NoError(t, held.Err(), "the plain lock is untouched")
		require.NoError(t, mu.Unlock(held))
	})
}

func TestInspectionRefusesBadInput(t *testing.T) {
	var zero rwlock.RWMutex
	_, err := zero.IsLocked(context.Background())
	require.ErrorIs(t, err, rwlock.ErrInvalidArgument)
	rw := rwlock.New(nil, "x")
	_, _, err = rw.HoldCount(context.Background())
	require.ErrorIs(t, err, rwlock.ErrInvalidArgument)
	_, err = rw.ForceUnlock(context.Background())
	require.ErrorIs(t, err, rwlock.ErrInvalidArgument)
	_, client := redistest.Miniredis(t)
	var noCtx context.Context // a nil context is the bad input under test
	_, err = rwlock.New(client, "x").TTL(noCtx)
	require.ErrorIs(t, err, rwlock.ErrInvalidArgument)
}

// Extend moves a fixed read or write lease's end; the read side's lease
// keys move with it.
func TestExtend(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		rw := rwlock.New(env.Universal, "ext", rwlock.WithLeaseTime(time.Second))
		r, err := rw.RLock(ctx)
		require.NoError(t, err)
		require.NoError(t, rw.Extend(r, 10*time.Second))
		id, _ := core.Owner(r)
		leaseKey := scripts.ReadTimeout("ext", id, 1)
		for _, k := range []string{"ext", leaseKey} {
			ttl := env.Universal.PTTL(ctx, k).Val()
			require.True(t, ttl > 9*time.Second, "%s ttl %v", k, ttl)
		}
		require.NoError(t, rw.RUnlock(r))

		w, err := rw.Lock(ctx)
		require.NoError(t, err)
		require.NoError(t, rw.Extend(w, 10*time.Second))
		ttl, err := rw.TTL(ctx)
		require.NoError(t, err)
		require.True(t, ttl > 9*time.Second, "ttl %v", ttl)
		require.NoError(t, rw.Unlock(w))
		require.ErrorIs(t, rw.Extend(w, time.Second), rwlock.ErrNotHeld)

		renewed := rwlock.New(env.Universal, "ext:wd")
		h, err := renewed.RLock(ctx)
		require.NoError(t, err)
		require.ErrorIs(t, renewed.Extend(h, time.Minute), rwlock.ErrInvalidArgument)
		require.NoError(t, renewed.RUnlock(h))
	})
}

// RLock's and Lock's options are the acquisition's own.
func TestPerCallOptions(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		rw := rwlock.New(env.Universal, "pc")
		r, err := rw.RLock(ctx, rwlock.WithLeaseTime(5*time.Second))
		require.NoError(t, err)
		require.NoError(t, rw.Extend(r, 6*time.Second), "a fixed lease for this hold")
		_, err = rw.TryLock(lock.NewOwner(ctx), rwlock.WithWaitTimeout(time.Millisecond))
		require.ErrorIs(t, err, rwlock.ErrNotAcquired)
		_, err = rw.Lock(lock.NewOwner(ctx), rwlock.WithWaitTimeout(50*time.Millisecond))
		require.ErrorIs(t, err, rwlock.ErrNotAcquired, "the per-call wait bound ended the wait")
		require.NoError(t, rw.RUnlock(r))
		_, err = rw.RLock(ctx, rwlock.WithLeaseTime(0))
		require.ErrorIs(t, err, rwlock.ErrInvalidArgument)
		_, perCall := rwlock.WithWatchdog(nil).(rwlock.LockOption)
		require.False(t, perCall, "the watchdog configures the RWMutex: RLock does not compile with it")
		require.Equal(t, int64(0), env.Universal.Exists(ctx, "pc").Val())
	})
}

// A holder label lives beside the hold of either side, and goes when the
// owner holds neither side any more; a labeled contender is told who holds
// the lock.
func TestHolderLabel(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		rw := rwlock.New(env.Universal, "lab", rwlock.WithHolderLabel("pod-7"))
		r, err := rw.RLock(ctx)
		require.NoError(t, err)
		id, _ := core.Owner(r)
		key := scripts.HolderLabel("lab", id)
		require.True(t, strings.HasPrefix(env.Universal.Get(ctx, key).Val(), "pod-7\t"))
		_, err = rwlock.New(env.Universal, "lab", rwlock.WithHolderLabel("pod-8")).TryLock(ctx)
		require.ErrorIs(t, err, rwlock.ErrNotAcquired)
		require.Contains(t, err.Error(), "held by pod-7 for ")
		require.NoError(t, rw.RUnlock(r))
		require.Zero(t, env.Universal.Exists(ctx, key).Val(), "the label goes with the hold")

		w, err := rw.Lock(ctx)
		require.NoError(t, err)
		wid, _ := core.Owner(w)
		wkey := scripts.HolderLabel("lab", wid)
		inner, err := rw.RLock(w) // write-then-read: the same owner
		require.NoError(t, err)
		require.NoError(t, rw.Unlock(w))
		require.Equal(t, int64(1), env.Universal.Exists(ctx, wkey).Val(), "still held (read)")
		require.NoError(t, rw.RUnlock(inner))
		require.Zero(t, env.Universal.Exists(ctx, wkey).Val())
	})
}

// Extend never shortens a lease, and refuses one under the shortest lease;
// Downgrade keeps the write hold's per-call lease.
func TestExtendBoundsAndDowngradeKeepsTheLease(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		rw := rwlock.New(env.Universal, "bounds")
		w, err := rw.Lock(ctx, rwlock.WithLeaseTime(10*time.Second))
		require.NoError(t, err)
		err = rw.Extend(w, 300*time.Millisecond)
		require.ErrorIs(t, err, rwlock.ErrInvalidArgument)
		require.Contains(t, err.Error(), "lengthens")
		require.ErrorIs(t, rw.Extend(w, 500*time.Microsecond), rwlock.ErrInvalidArgument)
		require.NoError(t, w.Err())

		r, err := rw.Downgrade(w)
		require.NoError(t, err)
		ttl := env.Universal.PTTL(ctx, "bounds").Val()
		require.True(t, ttl > 5*time.Second && ttl <= 10*time.Second, "the read hold keeps the 10 s lease: %v", ttl)
		require.NoError(t, rw.Extend(r, 20*time.Second), "a fixed lease still, so Extend applies")
		require.NoError(t, rw.RUnlock(r))
	})
}

// The force-unlock notice is not kept by an RWMutex, which does not offer
// it: package lock's option does not satisfy rwlock's types.
func TestForceUnlockNoticeRefused(t *testing.T) {
	o := lock.WithForceUnlockNotice()
	_, isNew := o.(rwlock.Option)
	_, perCall := o.(rwlock.LockOption)
	require.False(t, isNew || perCall)
}

// A labeled read hold unlocked out of order (outer first) keeps its label
// while the inner count holds; the last RUnlock deletes it.
func TestHolderLabelOutOfOrder(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		rw := rwlock.New(env.Universal, "lab:ooo", rwlock.WithHolderLabel("pod-7"))
		outer, err := rw.RLock(ctx)
		require.NoError(t, err)
		inner, err := rw.RLock(outer)
		require.NoError(t, err)
		id, _ := core.Owner(outer)
		key := scripts.HolderLabel("lab:ooo", id)
		require.NoError(t, rw.RUnlock(outer))
		require.Equal(t, int64(1), env.Universal.Exists(ctx, key).Val())
		require.NoError(t, rw.RUnlock(inner))
		require.Zero(t, env.Universal.Exists(ctx, key).Val())
	})
}
