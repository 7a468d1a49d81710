package lock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/testkit/redistest"
	"github.com/relock-go/relock/lock"
)

// Do releases on every path: a returned error, a panic, and a hold lost
// while fn runs (fn sees it through held, Do's error matches it).
func TestDoReleasesOnEveryPath(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		mu := lock.New(env.Universal, "do", lock.WithWatchdogTimeout(300*time.Millisecond))
		isLocked := func() bool {
			locked, err := mu.IsLocked(ctx)
			require.NoError(t, err)
			return locked
		}

		errWork := errors.New("work failed")
		err := mu.Do(ctx, func(held context.Context) error {
			require.True(t, isLocked())
			n, err := mu.HoldCount(held)
			require.NoError(t, err)
			require.Equal(t, 1, n)
			return errWork
		})
		require.ErrorIs(t, err, errWork)
		require.False(t, isLocked(), "released after an error")

		require.PanicsWithValue(t, "boom", func() {
			_ = mu.Do(ctx, func(context.Context) error { panic("boom") })
		})
		require.False(t, isLocked(), "released after a panic")

		err = mu.Do(ctx, func(held context.Context) error {
			require.NoError(t, env.Universal.Del(ctx, "do").Err())
			select {
			case <-held.Done():
			case <-time.After(5 * time.Second):
				t.Fatal("the loss was not seen through held")
			}
			return context.Cause(held)
		})
		require.ErrorIs(t, err, lock.ErrLockLost)

		wait, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer cancel()
		err = mu.Do(wait, func(held context.Context) error {
			<-wait.Done()
			time.Sleep(20 * time.Millisecond)
			return held.Err() // the wait's deadline does not end the hold
		})
		require.NoError(t, err)

		other, err := mu.Lock(ctx)
		require.NoError(t, err)
		short, cancel2 := context.WithTimeout(ctx, 50*time.Millisecond)
		defer cancel2()
		ran := false
		err = mu.Do(short, func(context.Context) error { ran = true; return nil })
		require.ErrorIs(t, err, context.DeadlineExceeded, "not acquired: fn is not run")
		require.False(t, ran)
		require.NoError(t, mu.Unlock(other))
	})
}

// The commonest slip, Unlock with the parent context instead of the one
// Lock returned, is ErrNotHeld that names the live hold.
func TestUnlockWithParentNamesTheLiveHold(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		mu := lock.New(env.Universal, "slip")
		held, err := mu.Lock(ctx)
		require.NoError(t, err)
		err = mu.Unlock(ctx)
		require.ErrorIs(t, err, lock.ErrNotHeld)
		require.ErrorContains(t, err, `unlock lock "slip"`)
		require.ErrorContains(t, err, "this process holds it through 1 other context(s), the oldest acquired")
		require.ErrorContains(t, err, "pass the context that the acquire returned")
		require.NoError(t, mu.Unlock(held))
		err = mu.Unlock(ctx)
		require.ErrorIs(t, err, lock.ErrNotHeld)
		require.NotContains(t, err.Error(), "other context", "no live hold left to name")
	})
}

// A ForceUnlock made in this process ends the holders here at once, not
// at their next renewal (10 s with the default lease); a holder of another
// lock is untouched.
func TestForceUnlockSeenLocallyAtOnce(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		mu := lock.New(env.Universal, "force")
		held, err := mu.Lock(ctx)
		require.NoError(t, err)
		inner, err := lock.New(env.Universal, "force").Lock(held) // re-entry through another value
		require.NoError(t, err)
		bystander := lock.New(env.Universal, "force:other")
		other, err := bystander.Lock(ctx)
		require.NoError(t, err)

		removed, err := lock.New(env.Universal, "force").ForceUnlock(ctx)
		require.NoError(t, err)
		require.True(t, removed)
		for _, h := range []context.Context{held, inner} {
			select {
			case <-h.Done():
			default:
				t.Fatal("the holder did not learn of the ForceUnlock at once")
			}
			require.ErrorIs(t, context.Cause(h), lock.ErrLockLost)
			require.ErrorContains(t, context.Cause(h), "force-unlocked")
		}
		require.ErrorIs(t, mu.Unlock(held), lock.ErrLockLost)
		require.NoError(t, other.Err(), "another lock's holder is untouched")
		require.NoError(t, bystander.Unlock(other))
	})
}

// Remaining follows the lease: within it while held, renewed by the
// watchdog past a whole lease, 0 once the hold ended.
func TestRemainingFollowsTheLease(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		const leaseTime = 300 * time.Millisecond
		mu := lock.New(env.Universal, "left", lock.WithWatchdogTimeout(leaseTime))
		held, err := mu.Lock(ctx)
		require.NoError(t, err)
		left, ok := lock.Remaining(held)
		require.True(t, ok)
		require.Greater(t, left, time.Duration(0))
		require.LessOrEqual(t, left, leaseTime)
		time.Sleep(leaseTime + 100*time.Millisecond) // renewed every lease/3
		left, ok = lock.Remaining(held)
		require.True(t, ok)
		require.Greater(t, left, time.Duration(0), "renewed: still time left after a whole lease")
		require.NoError(t, mu.Unlock(held))
		left, ok = lock.Remaining(held)
		require.True(t, ok)
		require.Zero(t, left)
	})
}

// A waiter of this process that takes the lock right after a ForceUnlock
// (woken by its unlock message) keeps its hold: only the holds from
// before the ForceUnlock are declared lost.
func TestForceUnlockSparesTheNextHolder(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		for range 10 {
			mu := lock.New(env.Universal, "force:next")
			held, err := mu.Lock(ctx)
			require.NoError(t, err)
			next := make(chan context.Context, 1)
			go func() {
				h, err := mu.Lock(ctx)
				assert.NoError(t, err)
				next <- h
			}()
			time.Sleep(5 * time.Millisecond) // the waiter is queued
			removed, err := mu.ForceUnlock(ctx)
			require.NoError(t, err)
			require.True(t, removed)
			h := <-next
			require.ErrorIs(t, context.Cause(held), lock.ErrLockLost)
			require.NoError(t, h.Err(), "the next holder is not the one force-unlocked")
			require.NoError(t, mu.Unlock(h))
		}
	})
}

// A goroutine given NewOwner of a hold's context waits for that hold and
// takes the lock when it is released (its wait does not end with the
// hold's context).
func TestNewOwnerWaitsForTheHold(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		mu := lock.New(env.Universal, "newowner")
		held, err := mu.Lock(ctx)
		require.NoError(t, err)
		_, ok := lock.FencingToken(lock.NewOwner(held))
		require.False(t, ok, "a fresh owner carries no token")
		next := make(chan error, 1)
		go func() {
			next <- mu.Do(lock.NewOwner(held), func(h context.Context) error {
				n, err := mu.HoldCount(h)
				if err == nil && n != 1 {
					err = errors.New("not a fresh owner")
				}
				return err
			})
		}()
		time.Sleep(50 * time.Millisecond)
		require.NoError(t, mu.Unlock(held))
		select {
		case err := <-next:
			require.NoError(t, err)
		case <-time.After(5 * time.Second):
			t.Fatal("the new owner never got the lock")
		}
	})
}
