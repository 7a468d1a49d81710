package lock_test

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/testkit/redistest"
	"github.com/relock-go/relock/lock"
	"github.com/relock-go/relock/rwlock"
	"github.com/relock-go/relock/semaphore"
)

// A release whose notification the user may not publish is refused
// before the script writes anything: the lock stays as it was, and the
// error names the command and the channel, not the script's SHA.
func TestReleaseRefusedPublishChangesNothing(t *testing.T) {
	for _, b := range []redistest.Backend{redistest.Backends()[1], redistest.ClusterBackend()} {
		t.Run(b.Name, func(t *testing.T) {
			ctx := ctxT(t)
			env := b.New(t)
			e := redistest.NewACLEnv(t, ctx, env, "nopublish", "~*", "resetchannels", "+@all")
			publish := "PUBLISH"
			if e.Cluster {
				publish = "SPUBLISH"
			}
			for _, tc := range releases(e.User) {
				t.Run(tc.name, func(t *testing.T) {
					release, err := tc.take(ctx)
					require.NoError(t, err)
					before := redistest.Keyspace(t, ctx, e.Admin)
					err = release()
					require.Error(t, err)
					require.ErrorContains(t, err, "NOPERM")
					require.ErrorContains(t, err, "may not "+publish+" to channel "+tc.channel)
					require.NotContains(t, err.Error(), "user_script")
					require.Equal(t, before, redistest.Keyspace(t, ctx, e.Admin), "nothing changed")
				})
			}
		})
	}
}

type release struct {
	name, channel string
	take          func(ctx context.Context) (release func() error, err error)
}

// releases are a hold of each primitive, released by its owner.
func releases(c redis.UniversalClient) []release {
	lockTake := func(mu *lock.Mutex) func(ctx context.Context) (func() error, error) {
		return func(ctx context.Context) (func() error, error) {
			held, err := mu.Lock(ctx)
			return func() error { return mu.Unlock(held) }, err
		}
	}
	rw, rr := rwlock.New(c, "doc"), rwlock.New(c, "page")
	sem := semaphore.New(c, "pool", 3)
	return []release{
		{"lock", "redisson_lock__channel:{job}", lockTake(lock.New(c, "job"))},
		{"fair lock", "redisson_lock__channel:{fair}", lockTake(lock.NewFair(c, "fair"))},
		{"write lock", "redisson_rwlock:{doc}", func(ctx context.Context) (func() error, error) {
			held, err := rw.Lock(ctx)
			return func() error { return rw.Unlock(held) }, err
		}},
		{"read lock", "redisson_rwlock:{page}", func(ctx context.Context) (func() error, error) {
			held, err := rr.RLock(ctx)
			return func() error { return rr.RUnlock(held) }, err
		}},
		{"semaphore", "redisson_sc:{pool}", func(ctx context.Context) (func() error, error) {
			held, err := sem.Acquire(ctx, 1)
			return func() error { return sem.Release(held) }, err
		}},
	}
}

// A user whose ACL selector allows writes on the application's keys only
// ("(+@write ~app:*)") may write the lock's hash but not its fencing
// counter: the acquisition is refused before the hash is written, with
// the command and key named, instead of leaving the hash held for its
// lease with nobody told. The check asks each command on its own key.
func TestSelectorRefusingTheCounterChangesNothing(t *testing.T) {
	ctx := ctxT(t)
	env := redistest.Backends()[1].New(t) // Redis 7's selectors: a redis-server
	e := redistest.NewACLEnv(t, ctx, env, "selector", "~*", "&*", "+@read", "+@scripting", "+@connection", "+time",
		"(+@write ~app:*)")
	before := redistest.Keyspace(t, ctx, e.Admin)
	_, err := lock.New(e.User, "app:job", lock.WithReplicaSync(0)).TryLock(ctx)
	require.ErrorContains(t, err, "NOPERM relock: this user may not INCR on key redisson_lock_token:{app:job}")
	require.Equal(t, before, redistest.Keyspace(t, ctx, e.Admin), "nothing written")
}
