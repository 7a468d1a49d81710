package core_test

import (
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/conn"
	"github.com/relock-go/relock/internal/core"
	"github.com/relock-go/relock/internal/errs"
	"github.com/relock-go/relock/internal/testkit/redistest"
)

// A wait bound shorter than a round trip bounds only the waiting: the
// first try is always made, so a free lock and a re-entry are taken, and
// a held lock is refused after that one try, without subscribing.
func TestShortWaitBound(t *testing.T) {
	t.Parallel()
	redistest.ForBackends(t, func(t *testing.T, env *redistest.Env) {
		hub := core.For(conn.Of(env.Client))
		for _, c := range []struct {
			name   string
			holder string
			direct bool
		}{{"free", "", false}, {"reentry", "me", true}} {
			t.Run(c.name, func(t *testing.T) {
				m := newMock(c.holder, long)
				req := request(hub, channelOf(t), m.try("me"))
				req.Wait = time.Nanosecond
				if c.direct {
					req.Entry = core.Reenter
				}
				require.NoError(t, do(testContext(t), req))
				assert.Equal(t, "me", m.heldBy())
				assert.Equal(t, 1, m.tries())
			})
		}
		t.Run("held", func(t *testing.T) {
			ctx := testContext(t)
			m := newMock("other", long)
			req := request(hub, channelOf(t), m.try("me"))
			req.Wait = time.Nanosecond
			require.ErrorIs(t, do(ctx, req), errs.ErrNotAcquired)
			assert.Equal(t, 1, m.tries())
			requireNoPubSubEventually(t, ctx, env, hub, channelOf(t))
		})
	})
}

// flaky is a lock held by another owner whose tries fail with err from
// try number from to try number to (inclusive); from then on the lock is
// free when free is set.
type flaky struct {
	mu       sync.Mutex
	from, to int
	err      error
	free     bool
	calls    int
	acquired bool
}

func (f *flaky) try(context.Context) (core.Result, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	switch {
	case f.calls >= f.from && (f.to == 0 || f.calls <= f.to):
		return core.Result{}, f.err
	case f.calls > f.to && f.to > 0 && f.free:
		f.acquired = true
		return core.Result{Acquired: true}, nil
	}
	return core.Result{TTL: long}, nil
}

func (f *flaky) tries() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

func refused() error {
	return &net.OpError{Op: "dial", Net: "tcp", Err: &net.AddrError{Err: "connect: connection refused"}}
}

// While waiting, a transient error (Redis unreachable, restarting) does
// not end the acquire: the waiter backs off and tries again, and acquires
// once Redis answers and the lock is free, although no unlock message
// came.
func TestTransientErrorWhileWaitingKeepsWaiting(t *testing.T) {
	t.Parallel()
	redistest.ForBackends(t, func(t *testing.T, env *redistest.Env) {
		hub := core.For(conn.Of(env.Client))
		ctx := testContext(t)
		// Try 1 finds the lock held; tries 2..6 (the one once subscribed,
		// then the backoff's) fail; try 7 finds it free.
		f := &flaky{from: 2, to: 6, err: refused(), free: true}
		began := time.Now()
		err := await(t, start(ctx, request(hub, channelOf(t), f.try)), "acquire")
		require.NoError(t, err)
		assert.Equal(t, 7, f.tries())
		// The backoff spaced the tries after the 5 failures (at least 5,
		// 10, 20, 40, 80 ms: half of each doubling step is fixed), and
		// did not wait for the 1 min TTL the lock reported.
		assert.GreaterOrEqual(t, time.Since(began), 150*time.Millisecond)
		requireNoPubSubEventually(t, ctx, env, hub, channelOf(t))
	})
}

// When ctx ends while tries fail with a transient error, the acquire
// returns ctx's cause (ErrNotAcquired for the wait bound) with the last
// such error, so the caller sees why it did not get the lock.
func TestTransientErrorThenContextEndReturnsBoth(t *testing.T) {
	t.Parallel()
	redistest.ForBackends(t, func(t *testing.T, env *redistest.Env) {
		hub := core.For(conn.Of(env.Client))
		errDown := fmt.Errorf("relay: %w", syscall.ECONNREFUSED)

		t.Run("deadline", func(t *testing.T) {
			f := &flaky{from: 2, err: errDown}
			ctx, cancel := context.WithTimeout(testContext(t), 300*time.Millisecond)
			defer cancel()
			err := await(t, start(ctx, request(hub, channelOf(t), f.try)), "acquire")
			require.ErrorIs(t, err, context.DeadlineExceeded)
			require.ErrorIs(t, err, syscall.ECONNREFUSED)
			assert.Greater(t, f.tries(), 3, "it kept trying")
			requireNoPubSubEventually(t, testContext(t), env, hub, channelOf(t))
		})

		t.Run("wait bound", func(t *testing.T) {
			f := &flaky{from: 2, err: errDown}
			req := request(hub, channelOf(t), f.try)
			req.Patience = 50 * time.Millisecond // pool nil: tries on this goroutine
			req.Wait = 300 * time.Millisecond
			err := await(t, start(testContext(t), req), "acquire")
			require.ErrorIs(t, err, errs.ErrNotAcquired)
			require.ErrorIs(t, err, syscall.ECONNREFUSED)
			requireNoPubSubEventually(t, testContext(t), env, hub, channelOf(t))
		})

		t.Run("answered since", func(t *testing.T) {
			// The error passed and a later try found the lock held: the
			// end of ctx is the whole story.
			f := &flaky{from: 2, to: 2, err: errDown}
			ctx, cancel := context.WithTimeout(testContext(t), 300*time.Millisecond)
			defer cancel()
			err := await(t, start(ctx, request(hub, channelOf(t), f.try)), "acquire")
			require.ErrorIs(t, err, context.DeadlineExceeded)
			require.NotErrorIs(t, err, syscall.ECONNREFUSED)
			assert.Equal(t, 3, f.tries(), "one backoff try, then the TTL (1 min) is the timer")
		})
	})
}

// The first try's error is returned at once, transient or not: Redis
// could not be reached when the acquire began. And an error that is not
// transient (a script error) ends a wait at once.
func TestErrorsThatEndTheAcquire(t *testing.T) {
	t.Parallel()
	redistest.ForBackends(t, func(t *testing.T, env *redistest.Env) {
		hub := core.For(conn.Of(env.Client))

		t.Run("first try", func(t *testing.T) {
			f := &flaky{from: 1, err: refused()}
			err := do(testContext(t), request(hub, channelOf(t), f.try))
			var nerr net.Error
			require.ErrorAs(t, err, &nerr)
			assert.Equal(t, 1, f.tries())
			assert.False(t, hub.Waiting(channelOf(t)))
		})

		t.Run("script error while waiting", func(t *testing.T) {
			ctx := testContext(t)
			f := &flaky{from: 2, err: redisError("ERR user_script:1: Script attempted to access nonexistent global variable 'x'")}
			err := await(t, start(ctx, request(hub, channelOf(t), f.try)), "acquire")
			require.ErrorContains(t, err, "user_script")
			assert.Equal(t, 2, f.tries())
			requireNoPubSubEventually(t, ctx, env, hub, channelOf(t))
		})
	})
}

// redisError is an error reply as go-redis returns it.
type redisError string

func (e redisError) Error() string { return string(e) }
func (redisError) RedisError()     {}

// A resend of a BUSY try that fails for the end of its context says so,
// with the server's last answer, and may have run: what it took must be
// given back, so the context's error is what it unwraps to, not the BUSY.
func TestResendMeetingTheEndOfItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	calls := 0
	_, err := core.TryOnce(ctx, core.Client{}, 5*time.Second, func(ctx context.Context) (core.Result, error) {
		calls++
		if calls == 1 {
			return core.Result{}, redisError("BUSY Redis is busy running a script.")
		}
		cancel() // as go-redis meets the end of ctx after sending
		return core.Result{}, ctx.Err()
	})
	require.Equal(t, 2, calls)
	require.ErrorIs(t, err, context.Canceled)
	require.True(t, conn.MayHaveRun(err), "a resend that may have run is given back")
	require.False(t, conn.TryAgain(err))
	require.Contains(t, err.Error(), "BUSY")
}

// A resend still on its way when its context ends is late: the error
// keeps the late call (conn.AfterLate), which a give-back waits for, and
// the server's BUSY that made it wait.
func TestLateResendMeetingTheEndOfItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	started, release := make(chan struct{}), make(chan struct{})
	var calls atomic.Int32
	go func() {
		<-started
		cancel() // while the resend waits for its reply
	}()
	_, err := core.TryOnce(ctx, core.ClientOn(conn.NewPool(0)), 5*time.Second, func(context.Context) (core.Result, error) {
		if calls.Add(1) == 1 {
			return core.Result{}, redisError("BUSY Redis is busy running a script.")
		}
		close(started)
		<-release // a server that has not answered yet
		return core.Result{Acquired: true}, nil
	})
	require.Equal(t, int32(2), calls.Load())
	require.ErrorIs(t, err, context.Canceled)
	require.True(t, conn.MayHaveRun(err))
	require.Contains(t, err.Error(), "BUSY")
	late := conn.AfterLate(err)
	require.NotNil(t, late, "the late call, which a give-back waits for")
	select {
	case <-late:
		t.Fatal("done before the call returned")
	default:
	}
	close(release)
	select {
	case <-late:
	case <-time.After(5 * time.Second):
		t.Fatal("the late call's end was not told")
	}
}

// An acquisition's first try is resent on BUSY up to its wait bound, even
// past the try's own patience, and no further; at the bound it is
// ErrNotAcquired, with the server's answer.
func TestFirstTryResentUpToTheWaitBound(t *testing.T) {
	redistest.ForBackends(t, func(t *testing.T, env *redistest.Env) {
		hub := core.For(conn.Of(env.Client))
		f := &flaky{from: 1, err: redisError("BUSY Redis is busy running a script.")}
		req := request(hub, channelOf(t), f.try)
		req.Patience = 50 * time.Millisecond // pool nil: tries on this goroutine
		req.Wait = 150 * time.Millisecond
		began := time.Now()
		err := do(testContext(t), req)
		took := time.Since(began)
		require.ErrorIs(t, err, errs.ErrNotAcquired)
		require.Contains(t, err.Error(), "BUSY")
		require.GreaterOrEqual(t, took, req.Wait, "the bound is waited out")
		require.Less(t, took, req.Wait+time.Second, "and not long past it")
		f.mu.Lock()
		defer f.mu.Unlock()
		require.Greater(t, f.calls, 1, "resent meanwhile")
	})
}

// A try under a deadline the client honours (a *redis.Client, through its
// twin) runs on the caller's goroutine, under that deadline; one whose
// context can end without a deadline goes to a worker.
func TestTryUnderADeadlineRunsInline(t *testing.T) {
	_, rdb := redistest.Miniredis(t)
	c := core.ClientOf(rdb)
	workers := conn.PoolFor(conn.Of(rdb))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	want, _ := ctx.Deadline()
	var got time.Time
	res, err := core.TryOnce(ctx, c, time.Second, func(ctx context.Context) (core.Result, error) {
		got, _ = ctx.Deadline()
		return core.Result{Acquired: true}, nil
	})
	require.NoError(t, err)
	require.True(t, res.Acquired)
	require.Equal(t, want, got, "sent under the caller's deadline")
	require.Zero(t, workers.Started(), "no worker for a try under a deadline")

	cctx, ccancel := context.WithCancel(context.Background())
	defer ccancel()
	_, err = core.TryOnce(cctx, c, time.Second, func(context.Context) (core.Result, error) { return core.Result{}, nil })
	require.NoError(t, err)
	require.EqualValues(t, 1, workers.Started(), "a cancellation alone needs a worker")
}

// secondTryDeadline runs an acquisition under ctx whose first try finds
// the lock held and whose second takes it, with a wait bound of 5 s and a
// patience of 1 s, and returns the deadline the second try was sent under.
func secondTryDeadline(ctx context.Context, t *testing.T, rdb redis.UniversalClient) (got time.Time, began time.Time) {
	var tries int
	req := request(core.For(conn.Of(rdb)), channelOf(t), func(ctx context.Context) (core.Result, error) {
		if tries++; tries == 1 {
			return core.Result{TTL: time.Millisecond}, nil // held, free soon
		}
		got, _ = ctx.Deadline()
		return core.Result{Acquired: true}, nil
	})
	req.Client, req.Patience, req.Wait = core.ClientOf(rdb), time.Second, 5*time.Second
	began = time.Now()
	require.NoError(t, do(ctx, req))
	return got, began
}

// A try inline under the wait bound may run past it by its patience (a
// healthy server's late answer is kept, as on a worker), but not past the
// caller's own deadline.
func TestInlineTryKeepsItsPatiencePastTheWaitBound(t *testing.T) {
	_, rdb := redistest.Miniredis(t)
	got, began := secondTryDeadline(testContext(t), t, rdb)
	require.WithinDuration(t, began.Add(6*time.Second), got, 100*time.Millisecond, "the bound and the patience")

	ctx, cancel := context.WithTimeout(testContext(t), 5500*time.Millisecond)
	defer cancel()
	got, _ = secondTryDeadline(ctx, t, rdb)
	want, _ := ctx.Deadline()
	require.WithinDuration(t, want, got, 100*time.Millisecond, "the caller's deadline")
}

// A caller that may cancel but set no deadline gets its tries sent on a
// worker, even under the wait bound's deadline: the bound is relock's, not
// a bound on when the caller's cancellation is seen.
func TestTryOfACallerWithoutADeadlineGoesToAWorker(t *testing.T) {
	_, rdb := redistest.Miniredis(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got, began := secondTryDeadline(ctx, t, rdb)
	require.WithinDuration(t, began.Add(5*time.Second), got, 100*time.Millisecond, "under the wait bound alone")
	require.Positive(t, conn.PoolFor(conn.Of(rdb)).Started(), "sent on a worker")
}
