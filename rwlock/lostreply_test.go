package rwlock_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/core"
	"github.com/relock-go/relock/internal/testkit/redistest"
	"github.com/relock-go/relock/rwlock"
)

// newAcquireHook is a go-redis hook on the read and write acquire
// scripts (see redistest.ScriptFaults).
func newAcquireHook() *redistest.ScriptFaults {
	return redistest.NewScriptFaults(rwlock.AcquireScriptSources()...)
}

// TestLostAcquireReplyGivenBack: a Try's script takes the read or write
// lock but its reply is lost: the Try reports the error, and the grant
// nobody was told of is given back at once, not left to its 30 s lease.
func TestLostAcquireReplyGivenBack(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		for _, side := range []string{"read", "write"} {
			ctx := ctxT(t)
			name := "lost:" + side
			lossy := env.NewClient(t)
			hook := newAcquireHook()
			lossy.AddHook(hook)
			hook.Lose.Store(1)
			rw := rwlock.New(lossy, name)
			var err error
			if side == "read" {
				_, err = rw.TryRLock(ctx)
			} else {
				_, err = rw.TryLock(ctx)
			}
			require.ErrorIs(t, err, os.ErrDeadlineExceeded, side)
			require.ErrorContains(t, err, `rwlock "`+name+`"`)
			other := rwlock.New(env.Universal, name)
			require.Eventually(t, func() bool {
				w, err := other.TryLock(ctx)
				if err != nil {
					return false
				}
				return other.Unlock(w) == nil
			}, 5*time.Second, 5*time.Millisecond, "%s: the lost grant was given back", side)
		}
	})
}

// TestAcquireScriptRunTwice: go-redis may send a script again after a read
// timeout, so it can run twice for one try; fresh acquisitions and
// re-entries of either side each count once.
func TestAcquireScriptRunTwice(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		c := env.NewClient(t)
		hook := newAcquireHook()
		hook.Twice = true
		c.AddHook(hook)
		rw := rwlock.New(c, "twice")
		w, err := rw.Lock(ctx)
		require.NoError(t, err)
		w2, err := rw.Lock(w)
		require.NoError(t, err)
		require.Equal(t, 2, count(t, env.Universal, "twice", ownerField(t, w)+":write"))
		r, err := rw.RLock(w2) // the writer reads
		require.NoError(t, err)
		require.Equal(t, 1, count(t, env.Universal, "twice", ownerField(t, w)))
		require.NoError(t, rw.RUnlock(r))
		require.NoError(t, rw.Unlock(w2))
		require.NoError(t, rw.Unlock(w))
		require.Zero(t, env.Universal.Exists(ctx, "twice").Val(), "freed by the last unlock")

		r, err = rw.RLock(ctx)
		require.NoError(t, err)
		require.Equal(t, 1, count(t, env.Universal, "twice", ownerField(t, r)))
		require.NoError(t, rw.RUnlock(r))
		require.Zero(t, env.Universal.Exists(ctx, "twice").Val())
	})
}

// TestLostReentryReplyGivenBack: a read re-entry's reply is lost: RLock
// reports the error at once, and the count it added (with its lease key)
// is given back through its latch, so the outer hold's RUnlock frees it.
func TestLostReentryReplyGivenBack(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		lossy := env.NewClient(t)
		hook := newAcquireHook()
		lossy.AddHook(hook)
		rw := rwlock.New(lossy, "lost:reentry")
		r, err := rw.RLock(ctx)
		require.NoError(t, err)
		hook.Lose.Store(1)
		_, err = rw.RLock(r)
		require.ErrorIs(t, err, os.ErrDeadlineExceeded)
		id := ownerField(t, r)
		require.Eventually(t, func() bool { return count(t, env.Universal, "lost:reentry", id) == 1 }, 5*time.Second, time.Millisecond,
			"the lost re-entry was given back")
		require.NoError(t, rw.RUnlock(r))
		require.Zero(t, env.Universal.Exists(ctx, "lost:reentry").Val(), "freed by the outer hold's unlock")
	})
}

// ownerField is the hash field of held's owner (its read count; the write
// count is this with ":write").
func ownerField(t testing.TB, held context.Context) string {
	t.Helper()
	id, ok := core.Owner(held)
	require.True(t, ok, "a hold's context carries its owner")
	return id
}

// TestAcquireRunAgainRenewsLease: go-redis sends a read acquisition's
// script again a read timeout after the first run, whose reply it lost,
// and the second run returns the first run's grant. The caller measures
// the hold's lease from a send it knows of, so the second run renews the
// lease in Redis: left at the first run's, it would lapse there before
// the reader is told, and a writer could get in. A fresh read (its
// minted owner's field) and a re-entry (its latch's grant).
func TestAcquireRunAgainRenewsLease(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		const name, lease, gap = "again", 2 * time.Second, 600 * time.Millisecond
		c := env.NewClient(t)
		hook := newAcquireHook()
		hook.Twice, hook.Gap = true, gap
		c.AddHook(hook)
		rw := rwlock.New(c, name, rwlock.WithLeaseTime(lease))
		r, err := rw.RLock(ctx)
		require.NoError(t, err)
		left := env.Universal.PTTL(ctx, name).Val()
		require.Greater(t, left, lease-gap/2, "a fresh read's second run renews the lease")
		inner, err := rw.RLock(r)
		require.NoError(t, err)
		left = env.Universal.PTTL(ctx, name).Val()
		require.Greater(t, left, lease-gap/2, "a re-entry's second run renews the lease")
		hook.Twice = false
		require.NoError(t, rw.RUnlock(inner))
		require.NoError(t, rw.RUnlock(r))
	})
}

// TestGiveBackReplyLostToo: a re-entry's reply is lost, and so is the
// reply of the give-back that follows; the give-back is sent again (as
// go-redis or its own retry would), and the count the re-entry added
// must still go back exactly once, on either side, so that the outer
// hold's unlock frees the lock.
func TestGiveBackReplyLostToo(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		for _, side := range []string{"read", "write"} {
			ctx := ctxT(t)
			name := "lost:giveback:" + side
			lossy := env.NewClient(t)
			acquires := newAcquireHook()
			gives := redistest.NewScriptFaults(rwlock.GiveBackSources()...)
			lossy.AddHook(acquires)
			lossy.AddHook(gives)
			rw := rwlock.New(lossy, name)
			lock, relock, unlock := rw.RLock, rw.RLock, rw.RUnlock
			field := func(held context.Context) string { return ownerField(t, held) }
			if side == "write" {
				lock, relock, unlock = rw.Lock, rw.Lock, rw.Unlock
				field = func(held context.Context) string { return ownerField(t, held) + ":write" }
			}
			outer, err := lock(ctx)
			require.NoError(t, err, side)
			acquires.Lose.Store(1)
			gives.Lose.Store(1)
			_, err = relock(outer)
			require.ErrorIs(t, err, os.ErrDeadlineExceeded, side)
			require.Eventually(t, func() bool { return gives.Seen.Load() >= 2 }, 5*time.Second, time.Millisecond,
				"%s: the give-back was sent again after its reply was lost", side)
			require.Eventually(t, func() bool { return count(t, env.Universal, name, field(outer)) == 1 }, 5*time.Second,
				time.Millisecond, "%s: the lost re-entry was given back", side)
			require.NoError(t, unlock(outer), side)
			require.Zero(t, env.Universal.Exists(ctx, name).Val(), "%s: freed by the outer hold's unlock", side)
		}
	})
}
