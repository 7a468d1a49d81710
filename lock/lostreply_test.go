package lock_test

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/testkit/redistest"
	"github.com/relock-go/relock/lock"
)

// loseAcquireReplies makes the next n replies of the acquire script that
// granted the lock look lost to a read timeout, after Redis ran the
// script. It returns the count of granting replies seen. Replies of tries
// that found the lock held pass: a waiter's try still in flight when the
// hook is added must not be what it loses.
func loseAcquireReplies(t testing.TB, c redis.UniversalClient, n int32) *atomic.Int32 {
	return loseAcquireRepliesLater(t, c, n)()
}

// loseAcquireRepliesLater hooks c at once and returns arm, from whose call
// on the next n granting replies are lost. A command already inside
// go-redis when a hook is added does not pass through it, so a test that
// starts losing replies while a waiter may be mid-try hooks first and arms
// later: a reply that arrives after arm is gated whenever it was sent.
func loseAcquireRepliesLater(t testing.TB, c redis.UniversalClient, n int32) (arm func() *atomic.Int32) {
	log := newScriptLog(t)
	c.AddHook(log)
	var lost atomic.Int32
	gate := func(ev *scriptEvent, sent bool) {
		if ev.name == "acquire" && sent && ev.cmd.Err() == nil && granted(ev.cmd) && lost.Add(1) <= n {
			ev.cmd.SetErr(redistest.ErrReadTimeout)
		}
	}
	return func() *atomic.Int32 {
		log.gate.Store(&gate)
		return &lost
	}
}

// granted tells an acquire script's reply that took the lock (a token
// alone, or {count > 0, token}) from one that found it held ({0, pttl}).
func granted(cmd *redis.Cmd) bool {
	switch v := cmd.Val().(type) {
	case int64:
		return true
	case []any:
		if len(v) != 2 {
			return false
		}
		c, ok := v[0].(int64)
		return ok && c > 0
	}
	return false
}

// TestLostAcquireReplyGivenBack: TryLock's script takes the lock but its
// reply is lost: TryLock reports the error, and the grant nobody was told
// of is given back at once, not left to its 30 s lease; waiters are woken.
func TestLostAcquireReplyGivenBack(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		const name = "lost:try"
		preload(t, env.Universal)
		lossy := env.NewClient(t)
		loseAcquireReplies(t, lossy, 1)

		// Another process waits for the lock meanwhile.
		other := lock.New(env.Universal, name)
		blocker, err := other.Lock(ctx)
		require.NoError(t, err)
		waiter := lockAsync(other, ctx)
		require.Eventually(t, func() bool { return waiting(env, name) }, 5*time.Second, time.Millisecond)
		require.NoError(t, other.Unlock(blocker))
		w := await(t, waiter, "the waiter")
		require.NoError(t, w.err)
		require.NoError(t, other.Unlock(w.ctx))

		start := time.Now()
		_, err = lock.New(lossy, name).TryLock(ctx)
		require.ErrorIs(t, err, os.ErrDeadlineExceeded)
		require.ErrorContains(t, err, `trylock lock "lost:try"`)
		require.Eventually(t, func() bool { return env.Universal.Exists(ctx, name).Val() == 0 }, 5*time.Second, time.Millisecond,
			"the lost grant was given back")
		t.Logf("given back %v after the TryLock", time.Since(start))
		again, err := other.TryLock(ctx)
		require.NoError(t, err, "another owner gets in")
		require.NoError(t, other.Unlock(again))
	})
}

// TestLostAcquireReplyRetryFindsGrant: a waiter's try takes the lock but
// its reply is lost; the wait goes on, and its next try finds its own
// grant and returns it (one count, the token drawn the first time).
func TestLostAcquireReplyRetryFindsGrant(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		const name = "lost:wait"
		preload(t, env.Universal)
		lossy := env.NewClient(t)
		holder := lock.New(env.Universal, name)
		held, err := holder.Lock(ctx)
		require.NoError(t, err)

		mu := lock.New(lossy, name)
		arm := loseAcquireRepliesLater(t, lossy, 1)
		ch := lockAsync(mu, ctx)
		require.Eventually(t, func() bool { return waiting(env, name) }, 5*time.Second, time.Millisecond)
		lost := arm()
		require.NoError(t, holder.Unlock(held))
		r := await(t, ch, "the waiter")
		require.NoError(t, r.err)
		require.GreaterOrEqual(t, lost.Load(), int32(2), "a reply was lost and the try made again")
		n, err := mu.HoldCount(r.ctx)
		require.NoError(t, err)
		require.Equal(t, 1, n, "the retry did not count twice")
		require.Equal(t, tokenOf(t, r.ctx), mustInt64(t, env.Universal.Get(ctx, tokenKeyOf(name))), "one token drawn")
		require.NoError(t, mu.Unlock(r.ctx))
		require.Zero(t, env.Universal.Exists(ctx, name).Val())
	})
}

// TestAcquireScriptRunTwice: go-redis sends a command again after a read
// timeout, so a script may run twice for one try. A fresh acquisition
// and a re-entry each count once.
func TestAcquireScriptRunTwice(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		const name = "twice"
		preload(t, env.Universal)
		c := env.NewClient(t)
		c.AddHook(twice{sha: redis.NewScript(lock.ScriptSources()["acquire"]).Hash()})
		mu := lock.New(c, name)
		held, err := mu.Lock(ctx)
		require.NoError(t, err)
		n, err := mu.HoldCount(held)
		require.NoError(t, err)
		require.Equal(t, 1, n)
		inner, err := mu.Lock(held)
		require.NoError(t, err)
		n, err = mu.HoldCount(inner)
		require.NoError(t, err)
		require.Equal(t, 2, n)
		require.Greater(t, tokenOf(t, inner), tokenOf(t, held))
		require.Equal(t, tokenOf(t, inner), mustInt64(t, env.Universal.Get(ctx, tokenKeyOf(name))))
		require.NoError(t, mu.Unlock(inner))
		require.NoError(t, mu.Unlock(held))
		require.Zero(t, env.Universal.Exists(ctx, name).Val(), "freed by the last unlock")
	})
}

// twice is a go-redis hook that sends every EVALSHA of the script sha
// twice and keeps the second reply, as a resend after a lost reply does.
type twice struct{ sha string }

func (twice) DialHook(next redis.DialHook) redis.DialHook { return next }

func (tw twice) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, c redis.Cmder) error {
		if args := c.Args(); len(args) < 2 || args[0] != "evalsha" || args[1] != tw.sha {
			return next(ctx, c)
		}
		if err := next(ctx, c); err != nil {
			return err
		}
		return next(ctx, c)
	}
}

func (tw twice) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// TestLostReentryReplyGivenBack: a re-entry's reply is lost: Lock reports
// the error at once (it was the first try), and the count it added is
// given back through its latch, so the outer hold's Unlock frees the lock.
func TestLostReentryReplyGivenBack(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		const name = "lost:reentry"
		preload(t, env.Universal)
		lossy := env.NewClient(t)
		mu := lock.New(lossy, name)
		held, err := mu.Lock(ctx)
		require.NoError(t, err)
		loseAcquireReplies(t, lossy, 1)
		_, err = mu.Lock(held)
		require.ErrorIs(t, err, os.ErrDeadlineExceeded)
		require.Eventually(t, func() bool {
			n, err := mu.HoldCount(held)
			return err == nil && n == 1
		}, 5*time.Second, time.Millisecond, "the lost re-entry was given back")
		require.NoError(t, mu.Unlock(held))
		require.Zero(t, env.Universal.Exists(ctx, name).Val(), "freed by the outer hold's unlock")
	})
}

// TestAcquireRunAgainRenewsLease: go-redis sends a script again a read
// timeout after the first run, whose reply it lost, and the second run
// returns the first run's grant. The caller measures the hold's lease
// from a send it knows of, so the second run renews the lease in Redis:
// left at the first run's, it would lapse there before the holder is
// told, and another could take the lock. A re-entry's second run (its
// latch's grant), of a lock and of a fair lock.
func TestAcquireRunAgainRenewsLease(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		for _, fair := range []bool{false, true} {
			ctx := ctxT(t)
			const lease, gap = 2 * time.Second, 600 * time.Millisecond
			name := fmt.Sprintf("again:%t", fair)
			preload(t, env.Universal)
			c := env.NewClient(t)
			hook := redistest.NewScriptFaults(lock.ScriptSources()["acquire"], lock.ScriptSources()["fair_acquire"])
			c.AddHook(hook)
			mu := lock.New(c, name, lock.WithLeaseTime(lease))
			if fair {
				mu = lock.NewFair(c, name, lock.WithLeaseTime(lease))
			}
			held, err := mu.Lock(ctx)
			require.NoError(t, err)
			hook.Twice, hook.Gap = true, gap
			inner, err := mu.Lock(held)
			require.NoError(t, err)
			require.Equal(t, int32(2), hook.Seen.Load(), "fair %t: both acquisitions went through the hook", fair)
			left := env.Universal.PTTL(ctx, name).Val()
			require.Greater(t, left, lease-gap/2, "fair %t: the second run renews the lease", fair)
			hook.Twice = false
			require.NoError(t, mu.Unlock(inner))
			require.NoError(t, mu.Unlock(held))
		}
	})
}
