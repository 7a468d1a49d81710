package rwlock_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/testkit/redistest"
	"github.com/relock-go/relock/rwlock"
)

// A read release purges the readers whose lease keys are all gone (a
// crashed process), and frees the lock when no live reader is left: it
// decides both from what it read before its first write.
func TestReadReleasePurgesCrashedReaders(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		const lease = time.Minute
		crashed := rwlock.New(env.Universal, "rp", rwlock.WithLeaseTime(lease)) // no renewal to bring its key back
		a, err := crashed.RLock(as(ctx, "crashed"))
		require.NoError(t, err)
		live := rwlock.New(env.Universal, "rp")
		b, err := live.RLock(as(ctx, "b"))
		require.NoError(t, err)
		c, err := live.RLock(as(ctx, "c"))
		require.NoError(t, err)
		require.NoError(t, env.Universal.Del(ctx, leaseKey("rp", "crashed", 1)).Err()) // its process is gone

		require.NoError(t, live.RUnlock(b))
		require.Equal(t, 0, count(t, env.Universal, "rp", "crashed"), "the crashed reader was purged")
		require.Equal(t, 0, count(t, env.Universal, "rp", "b"))
		require.Equal(t, 1, count(t, env.Universal, "rp", "c"))
		require.False(t, exists(t, env.Universal, leaseKey("rp", "b", 1)))
		ttl := env.Universal.PTTL(ctx, "rp").Val()
		require.Greater(t, ttl, time.Duration(0), "the hash keeps a TTL")
		require.LessOrEqual(t, ttl, env.Universal.PTTL(ctx, leaseKey("rp", "c", 1)).Val()+50*time.Millisecond,
			"the hash lives as long as the longest reader lease left")

		require.NoError(t, live.RUnlock(c))
		require.False(t, exists(t, env.Universal, "rp"), "the last live reader freed the lock")
		w, err := live.TryLock(as(ctx, "w"))
		require.NoError(t, err)
		require.NoError(t, live.Unlock(w))
		require.ErrorIs(t, crashed.RUnlock(a), rwlock.ErrLockLost)
	})
}

// A read release reads first, and asks about the writes after its first
// one (a DEL) before that one: a refusal anywhere changes nothing and
// names the command.
func TestReadReleaseRefusedChangesNothing(t *testing.T) {
	ctx := ctxT(t)
	env := redistest.Backends()[1].New(t) // Redis 7's selectors: a redis-server

	// Another reader stays: after the lease key's DEL comes the HDEL.
	e := redistest.NewACLEnv(t, ctx, env, "nohdel", "~*", "&*", "+@all", "-hdel")
	rw := rwlock.New(e.User, "app:doc")
	a, err := rw.RLock(as(ctx, "a"))
	require.NoError(t, err)
	b, err := rw.RLock(as(ctx, "b"))
	require.NoError(t, err)
	before := redistest.Keyspace(t, ctx, e.Admin)
	require.ErrorContains(t, rw.RUnlock(a), "NOPERM relock: this user may not run HDEL")
	require.Equal(t, before, redistest.Keyspace(t, ctx, e.Admin), "nothing written")
	require.NoError(t, e.Admin.Do(ctx, "acl", "setuser", "nohdel", "+hdel").Err())
	require.NoError(t, rw.RUnlock(b), "allowed again, the other reader releases")

	// The last reader's release frees the lock with one DEL, refused here
	// on the lease key's pattern.
	e = redistest.NewACLEnv(t, ctx, env, "nodel", "~*", "&*", "+@all", "-del", "(+del ~app:*)")
	one := rwlock.New(e.User, "app:one")
	c, err := one.RLock(as(ctx, "c"))
	require.NoError(t, err)
	before = redistest.Keyspace(t, ctx, e.Admin)
	require.ErrorContains(t, one.RUnlock(c), "NOPERM relock: this user may not DEL on one of its keys")
	require.Equal(t, before, redistest.Keyspace(t, ctx, e.Admin), "nothing written")
}
