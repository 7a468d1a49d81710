package semaphore_test

import (
	"context"
	"net"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/semaphore"
)

// loseReplies is a go-redis hook that lets the acquire script run and
// then makes its reply look lost to a read timeout, lose times.
type loseReplies struct {
	sha  string
	src  string
	lose atomic.Int32
	seen atomic.Int32
}

func newLoseReplies(n int32) *loseReplies {
	src := semaphore.AcquireScriptSource()
	l := &loseReplies{sha: redis.NewScript(src).Hash(), src: src}
	l.lose.Store(n)
	return l
}

func (l *loseReplies) DialHook(next redis.DialHook) redis.DialHook { return next }

func (l *loseReplies) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, c redis.Cmder) error {
		args := c.Args()
		if len(args) < 2 || (args[1] != l.sha && args[1] != l.src) {
			return next(ctx, c)
		}
		err := next(ctx, c)
		l.seen.Add(1)
		if err == nil && l.lose.Add(-1) >= 0 {
			err = &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}
			c.SetErr(err)
		}
		return err
	}
}

func (l *loseReplies) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// TestLostAcquireReplyGivenBack: TryAcquire's script takes the permits
// but its reply is lost: TryAcquire reports the error, and the permits
// nobody was told of come back at once, not when their lease ends.
func TestLostAcquireReplyGivenBack(t *testing.T) {
	each(t, func(t *testing.T, env *env) {
		ctx := ctxT(t)
		lossy := env.NewClient(t)
		lossy.AddHook(newLoseReplies(1))
		_, err := semaphore.New(lossy, "lost", 3).TryAcquire(ctx, 2)
		require.ErrorIs(t, err, os.ErrDeadlineExceeded)
		require.ErrorContains(t, err, `tryacquire semaphore "lost"`)
		s := semaphore.New(env.Universal, "lost", 3)
		require.Eventually(t, func() bool {
			n, err := s.Available(ctx)
			return err == nil && n == 3
		}, 5*time.Second, time.Millisecond, "the lost permits were given back")
	})
}

// TestLostAcquireReplyRetryFindsPermit: a waiter's try takes the permits
// but its reply is lost; the wait goes on, and the next try finds its own
// permit instead of taking more.
func TestLostAcquireReplyRetryFindsPermit(t *testing.T) {
	each(t, func(t *testing.T, env *env) {
		ctx := ctxT(t)
		s := semaphore.New(env.Universal, "lost-wait", 3)
		all, err := s.Acquire(ctx, 3)
		require.NoError(t, err)
		lossy := env.NewClient(t)
		hook := newLoseReplies(0)
		lossy.AddHook(hook)
		w := semaphore.New(lossy, "lost-wait", 3)
		done := make(chan error, 1)
		var got context.Context
		go func() {
			var err error
			got, err = w.Acquire(ctx, 2)
			done <- err
		}()
		require.Eventually(t, func() bool { return hook.seen.Load() >= 2 }, 5*time.Second, time.Millisecond, "the waiter tried twice")
		hook.lose.Store(1)
		require.NoError(t, s.Release(all))
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(10 * time.Second):
			t.Fatal("the waiter did not get its permits")
		}
		n, err := s.Available(ctx)
		require.NoError(t, err)
		require.EqualValues(t, 1, n, "the retry did not take 2 more")
		require.NoError(t, w.Release(got))
		n, err = s.Available(ctx)
		require.NoError(t, err)
		require.EqualValues(t, 3, n)
	})
}
