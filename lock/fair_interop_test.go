package lock_test

import (
	"context"
	_ "embed"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/testkit/redistest"
	"github.com/relock-go/relock/lock"
)

// Interop with Redisson's RFairLock: fakeFair speaks its wire protocol
// through testdata/redisson_fair_*.lua, written from a reading of
// Redisson's RedissonFairLock: the lock hash of an RLock, the waiters'
// lock names in redisson_lock_queue:{name} in arrival order, their
// deadlines in redisson_lock_timeout:{name} (client time, each one
// threadWaitTime past the one before), and an unlock message published to
// the first waiter's own channel redisson_lock__channel:{name}:<lock name>.

var (
	//go:embed testdata/redisson_fair_lock.lua
	redissonFairLockLua string
	//go:embed testdata/redisson_fair_unlock.lua
	redissonFairUnlockLua string

	redissonFairLockScript   = redis.NewScript(redissonFairLockLua)
	redissonFairUnlockScript = redis.NewScript(redissonFairUnlockLua)
)

// redissonThreadWait is RFairLock's default threadWaitTime.
const redissonThreadWait = 5 * time.Minute

type fakeFair struct {
	rdb     redis.UniversalClient
	id      string
	publish string
}

func (f *fakeFair) holder(thread string) string { return f.id + ":" + thread }

var fairKeys = []string{"fair", fairQueue, fairTimeouts}

// tryLock is one attempt of RFairLock.tryLock(wait): taken (or re-entered),
// or queued (once) with how long to wait.
func (f *fakeFair) tryLock(ctx context.Context, thread string) (bool, error) {
	err := redissonFairLockScript.Run(ctx, f.rdb, fairKeys, redissonLease.Milliseconds(), f.holder(thread),
		redissonThreadWait.Milliseconds(), time.Now().UnixMilli()).Err()
	if errors.Is(err, redis.Nil) {
		return true, nil
	}
	return false, err
}

func (f *fakeFair) unlock(ctx context.Context, thread string) error {
	return redissonFairUnlockScript.Run(ctx, f.rdb, append(fairKeys, "redisson_lock__channel:{fair}"),
		redissonUnlockMessage, redissonLease.Milliseconds(), f.holder(thread), time.Now().UnixMilli(), f.publish).Err()
}

// A relock fair waiter and a Redisson RFairLock thread share one line:
// each is woken on its own channel by the other's unlock, in arrival
// order.
func TestFairInteropRedisson(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		admin := env.U()
		java := &fakeFair{rdb: env.NewClient(t), id: uuid.NewString(), publish: publishCmd(env)}

		// Java holds; a Go waiter queues and is woken by Java's unlock on
		// its own channel, long before Java's 30 s lease would run out.
		ok, err := java.tryLock(ctx, "1")
		require.NoError(t, err)
		require.True(t, ok)
		goClient := env.NewClient(t)
		got := lockAsync(lock.NewFair(goClient, "fair"), ctx)
		awaitQueued(t, ctx, admin, 1)
		unlocked := time.Now()
		require.NoError(t, java.unlock(ctx, "1"))
		r := await(t, got, "Go waiter")
		require.NoError(t, r.err)
		t.Logf("woken by the Java unlock: took the lock %v after it", time.Since(unlocked))
		require.Less(t, time.Since(unlocked), 2*time.Second)

		// Go holds; a Java thread queues, then a Go waiter behind it. The
		// Go unlock wakes the Java thread (its channel), not the Go waiter.
		ok, err = java.tryLock(ctx, "2")
		require.NoError(t, err)
		require.False(t, ok)
		require.Equal(t, []string{java.holder("2")}, queued(t, ctx, admin))
		javaWake, err := redistest.Subscribe(ctx, env.NewClient(t), "redisson_lock__channel:{fair}:"+java.holder("2"))
		require.NoError(t, err)
		defer javaWake.Close()
		other := env.NewClient(t)
		second := lockAsync(lock.NewFair(other, "fair"), ctx)
		awaitQueued(t, ctx, admin, 2)
		require.NoError(t, lock.NewFair(goClient, "fair").Unlock(r.ctx))
		select {
		case msg := <-javaWake.Channel():
			require.Equal(t, redissonUnlockMessage, msg.Payload)
		case <-time.After(5 * time.Second):
			t.Fatal("the Java thread was not woken on its channel")
		}
		select {
		case r := <-second:
			t.Fatalf("the Go waiter passed the Java thread before it: %v", r.err)
		case <-time.After(300 * time.Millisecond):
		}
		ok, err = java.tryLock(ctx, "2")
		require.NoError(t, err)
		require.True(t, ok, "the Java thread, first in line, takes it")
		require.NoError(t, java.unlock(ctx, "2"))
		// RFairLock moved the Go waiter's deadline 5 min closer when it
		// took the lock, so the Go waiter lost its place; its next renewal
		// (a second at most) queues it again, here at the head.
		r = await(t, second, "Go waiter behind Java")
		require.NoError(t, r.err)
		require.NoError(t, lock.NewFair(other, "fair").Unlock(r.ctx))
		require.Empty(t, queued(t, ctx, admin))
	})
}
