package semaphore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock"
	"github.com/relock-go/relock/lock"
	"github.com/relock-go/relock/rwlock"
	"github.com/relock-go/relock/semaphore"
)

// TestSemaphoreRefusesAnotherKindsName: while a lock, a fair lock or an
// rwlock (read or write) of another process holds a name, a semaphore of
// that name is refused at once with ErrWrongKind naming the holder's kind,
// by TryAcquire and by Acquire (no waiting), and neither they nor
// Available, Resize or a Release write into the holder's hash.
func TestSemaphoreRefusesAnotherKindsName(t *testing.T) {
	holders := []struct {
		what, kind string
		// take holds name through c, and returns what releases it
		take func(ctx context.Context, c redis.UniversalClient, name string) (func() error, error)
	}{
		{"lock", "held by a lock", func(ctx context.Context, c redis.UniversalClient, name string) (func() error, error) {
			m := lock.New(c, name)
			held, err := m.TryLock(ctx)
			return func() error { return m.Unlock(held) }, err
		}},
		{"fair lock", "held by a lock", func(ctx context.Context, c redis.UniversalClient, name string) (func() error, error) {
			m := lock.NewFair(c, name)
			held, err := m.TryLock(ctx)
			return func() error { return m.Unlock(held) }, err
		}},
		{"writer", "held by an rwlock", func(ctx context.Context, c redis.UniversalClient, name string) (func() error, error) {
			rw := rwlock.New(c, name)
			held, err := rw.TryLock(ctx)
			return func() error { return rw.Unlock(held) }, err
		}},
		{"reader", "held by an rwlock", func(ctx context.Context, c redis.UniversalClient, name string) (func() error, error) {
			rw := rwlock.New(c, name)
			held, err := rw.TryRLock(ctx)
			return func() error { return rw.RUnlock(held) }, err
		}},
	}
	each(t, func(t *testing.T, env *env) {
		if env.Mini != nil {
			env.Mini.SetTime(time.Time{}) // the locks' scripts read TIME too
		}
		ctx := ctxT(t)
		var grants int
		for _, h := range holders {
			t.Run(h.what, func(t *testing.T) {
				name := "kind:" + h.what
				release, err := h.take(ctx, env.Universal, name)
				require.NoError(t, err)
				defer func() { require.NoError(t, release()) }()
				before := env.Universal.HGetAll(ctx, name).Val()
				s := semaphore.New(env.secondClient(t), name, 1, semaphore.WithWaitTimeout(5*time.Second))

				_, err = s.TryAcquire(ctx, 1)
				grants += requireWrongKind(t, err, "tryacquire", name, h.kind)
				start := time.Now()
				_, err = s.Acquire(ctx, 1)
				grants += requireWrongKind(t, err, "acquire", name, h.kind)
				require.Less(t, time.Since(start), time.Second, "Acquire is refused at once, not after a wait")
				_, err = s.Available(ctx)
				requireWrongKind(t, err, "available", name, h.kind)
				requireWrongKind(t, s.Resize(ctx, 2), "resize", name, h.kind)
				require.ErrorIs(t, s.Release(ctx), semaphore.ErrNotHeld)

				require.Equal(t, before, env.Universal.HGetAll(ctx, name).Val(), "the holder's hash is unchanged")
				for _, k := range []string{"{" + name + "}:permits", "{" + name + "}:weights", "{" + name + "}:waiters", "{" + name + "}:waiter_expiry"} {
					require.Zero(t, env.Universal.Exists(ctx, k).Val(), "%s written", k)
				}
			})
		}
		t.Logf("grants to a semaphore on a name another kind holds: %d of %d acquisitions", grants, 2*len(holders))
		require.Zero(t, grants)
	})
}

// requireWrongKind checks that err refuses op for another kind, and
// returns 1 when op was granted instead.
func requireWrongKind(t *testing.T, err error, op, name, kind string) int {
	t.Helper()
	if !errors.Is(err, semaphore.ErrWrongKind) {
		t.Errorf("%s: got %v, want ErrWrongKind", op, err)
		if err == nil {
			return 1
		}
		return 0
	}
	require.ErrorIs(t, err, semaphore.ErrNotAcquired, "ErrWrongKind matches ErrNotAcquired")
	var e *relock.Error
	require.ErrorAs(t, err, &e)
	require.ErrorContains(t, err, op+` semaphore "`+name+`"`)
	require.ErrorContains(t, err, kind)
	return 0
}
