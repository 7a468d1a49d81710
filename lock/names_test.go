package lock_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/testkit/redistest"
	"github.com/relock-go/relock/lock"
	"github.com/relock-go/relock/rwlock"
	"github.com/relock-go/relock/semaphore"
)

// A name whose braces would scatter its keys over cluster slots is refused
// by every primitive, before anything is written, on every server alike; a
// name with a hash tag of its own works on a cluster too.
func TestNamesAndHashTags(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		for _, name := range []string{"a}b", "a{}b", "a{b", "{}", "}{"} {
			_, err := lock.New(env.Universal, name).TryLock(ctx)
			require.ErrorIs(t, err, lock.ErrInvalidArgument, name)
			require.ErrorContains(t, err, "hash tag", name)
			_, err = rwlock.New(env.Universal, name).WriteLocker().TryLock(ctx)
			require.ErrorIs(t, err, lock.ErrInvalidArgument, name)
			_, err = rwlock.New(env.Universal, name).ReadLocker().TryLock(ctx)
			require.ErrorIs(t, err, lock.ErrInvalidArgument, name)
			_, err = semaphore.New(env.Universal, name, 2).TryAcquire(ctx, 1)
			require.ErrorIs(t, err, lock.ErrInvalidArgument, name)
		}
		keys, err := redistest.Keys(ctx, env.Universal, "*")
		require.NoError(t, err)
		require.Empty(t, keys, "a refused name writes nothing")

		for _, name := range []string{"{a}{b}", "{user1}:lock", "}{a}"} {
			held, err := lock.New(env.Universal, name).TryLock(ctx)
			require.NoError(t, err, name)
			require.NoError(t, lock.New(env.Universal, name).Unlock(held), name)

			rw := rwlock.New(env.Universal, name+":rw")
			r, err := rw.ReadLocker().TryLock(ctx)
			require.NoError(t, err, name)
			require.NoError(t, rw.ReadLocker().Unlock(r), name)
			w, err := rw.WriteLocker().TryLock(ctx)
			require.NoError(t, err, name)
			require.NoError(t, rw.WriteLocker().Unlock(w), name)

			s := semaphore.New(env.Universal, name+":sem", 2)
			p, err := s.TryAcquire(ctx, 1)
			require.NoError(t, err, name)
			require.NoError(t, s.Release(p), name)
		}
	})
}
