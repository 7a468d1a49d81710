package lock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/testkit/redistest"
	"github.com/relock-go/relock/lock"
)

// A wait timeout shorter than a round trip bounds the waiting only, as
// Redisson's tryLock(waitTime) does: the first attempt is always made, so
// a free lock is taken and a re-entry, which never waits, succeeds; a
// lock held by another owner is refused after that one attempt.
func TestShortWaitTimeoutTakesAFreeLock(t *testing.T) {
	for _, b := range redistest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			env := b.New(t)
			ctx := ctxT(t)
			for _, wait := range []time.Duration{time.Nanosecond, 6 * time.Nanosecond, time.Microsecond} {
				mu := lock.New(env.U(), "short", lock.WithWaitTimeout(wait))
				held, err := mu.Lock(ctx)
				require.NoError(t, err, "wait %v: a free lock", wait)
				inner, err := mu.Lock(held)
				require.NoError(t, err, "wait %v: a re-entry", wait)
				n, err := mu.HoldCount(inner)
				require.NoError(t, err)
				require.Equal(t, 2, n)

				other := lock.New(env.NewClient(t), "short", lock.WithWaitTimeout(wait))
				began := time.Now()
				_, err = other.Lock(ctx)
				require.ErrorIs(t, err, lock.ErrNotAcquired, "wait %v: held by another owner", wait)
				require.Less(t, time.Since(began), 5*time.Second)

				require.NoError(t, mu.Unlock(inner))
				require.NoError(t, mu.Unlock(held))
			}
		})
	}
}

// An unlock timeout under a millisecond would give the unlock latch a
// lifetime of 0 ms (2*timeout in whole ms), which Redis refuses after the
// release script has written: it is bad input, refused before anything is
// written.
func TestSubMillisecondUnlockTimeoutIsInvalid(t *testing.T) {
	for _, b := range redistest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			env := b.New(t)
			ctx := ctxT(t)
			for _, d := range []time.Duration{time.Nanosecond, time.Microsecond, time.Millisecond - 1} {
				mu := lock.New(env.U(), "latch", lock.WithUnlockTimeout(d))
				_, err := mu.Lock(ctx)
				require.ErrorIs(t, err, lock.ErrInvalidArgument, "unlock timeout %v", d)
				require.ErrorContains(t, err, "unlock timeout")
				_, err = mu.TryLock(ctx)
				require.ErrorIs(t, err, lock.ErrInvalidArgument)
				require.ErrorIs(t, mu.Unlock(ctx), lock.ErrInvalidArgument)
				keys, err := redistest.Keys(ctx, env.U(), "*")
				require.NoError(t, err)
				require.Empty(t, keys, "nothing may be written on invalid input")
			}

			// A millisecond is a valid bound (the latch lives 2 ms). Unlock
			// returns within it: a release that takes longer reports so and
			// goes on in the background.
			mu := lock.New(env.U(), "latch", lock.WithUnlockTimeout(time.Millisecond))
			held, err := mu.Lock(ctx)
			require.NoError(t, err)
			inner, err := mu.Lock(held)
			require.NoError(t, err)
			for _, h := range []context.Context{inner, held} { // a re-entry's unlock writes a latch
				if err := mu.Unlock(h); err != nil {
					require.ErrorIs(t, err, context.DeadlineExceeded)
					require.NotErrorIs(t, err, lock.ErrInvalidArgument)
					require.Eventually(t, func() bool { n, err := mu.HoldCount(h); return err == nil && n < 2 }, 5*time.Second, time.Millisecond)
				}
			}
			require.Eventually(t, func() bool { locked, err := mu.IsLocked(ctx); return err == nil && !locked }, 5*time.Second, time.Millisecond)
		})
	}
}

// A waiter keeps waiting through an outage of Redis (here the server
// going away and coming back), whatever errors its tries meet meanwhile,
// and acquires once the lock is free; one with a deadline returns at its
// deadline. Before, the first try that met "connection refused" ended
// the wait.
func TestWaiterKeepsWaitingThroughAnOutage(t *testing.T) {
	for _, b := range redistest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			env := b.New(t)
			ctx := ctxT(t)
			name := "outage"
			holder := lock.New(env.NewClient(t), name)
			held, err := holder.Lock(ctx)
			require.NoError(t, err)

			waiter := lock.New(env.U(), name)
			type result struct {
				held context.Context
				err  error
			}
			unbounded := make(chan result, 1)
			go func() {
				h, err := waiter.Lock(ctx)
				unbounded <- result{h, err}
			}()
			// It heads the local queue: the hub wakes it when the
			// connection breaks, and it tries during the outage.
			require.Eventually(t, func() bool {
				n, err := env.Subscribers(ctx, "redisson_lock__channel:{"+name+"}")
				return err == nil && n == 1
			}, 10*time.Second, 5*time.Millisecond, "the waiter subscribes")
			bctx, bcancel := context.WithTimeout(ctx, 1500*time.Millisecond)
			defer bcancel()
			bounded := make(chan result, 1)
			go func() {
				h, err := waiter.Lock(bctx)
				bounded <- result{h, err}
			}()
			time.Sleep(100 * time.Millisecond)

			// Down: the waiters' subscription breaks, the hub wakes them,
			// and their tries meet "connection refused".
			if env.Mini != nil {
				env.Mini.Close()
			} else {
				env.Server.Stop()
			}
			r := <-bounded
			require.ErrorIs(t, r.err, context.DeadlineExceeded, "the waiter with a deadline: %v", r.err)
			time.Sleep(1500 * time.Millisecond) // go-redis's dial retries take about a second
			select {
			case r := <-unbounded:
				t.Fatalf("the waiter without a deadline returned during the outage: %v", r.err)
			default:
			}

			// Back: a real server comes back empty (the lock is free); the
			// miniredis keeps its data, so the holder unlocks.
			if env.Mini != nil {
				require.NoError(t, env.Mini.Restart())
				require.NoError(t, holder.Unlock(held))
			} else {
				env.Server.Restart(t)
				if err := holder.Unlock(held); err != nil && !errors.Is(err, lock.ErrLockLost) {
					t.Fatalf("holder's unlock: %v", err)
				}
			}
			select {
			case r := <-unbounded:
				require.NoError(t, r.err, "the waiter without a deadline, after the outage")
				require.NoError(t, waiter.Unlock(r.held))
			case <-time.After(15 * time.Second):
				t.Fatal("the waiter without a deadline did not acquire after the outage")
			}
		})
	}
}
