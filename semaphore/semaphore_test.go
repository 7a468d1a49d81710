package semaphore_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.uber.org/goleak"

	"github.com/relock-go/relock/internal/testkit/redistest"
	"github.com/relock-go/relock/semaphore"
	"github.com/relock-go/relock/tracing"
	"github.com/relock-go/relock/watchdog"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(redistest.Main(m)) }

// env is a redistest.Env whose server clock the test controls.
//
// The semaphore's scripts compare lease expiries with Redis TIME. On
// miniredis TIME is the real wall clock unless SetTime pins it, and
// FastForward moves key TTLs but not TIME; so on miniredis each pins TIME
// at the start and advance moves TIME (SetTime) and TTLs (FastForward) in
// step. A real redis-server's TIME runs on its own: advance sleeps.
type env struct {
	*redistest.Env
	now time.Time // miniredis's pinned TIME
}

func (e *env) advance(d time.Duration) {
	if e.Mini == nil {
		time.Sleep(d)
		return
	}
	e.now = e.now.Add(d)
	e.Mini.SetTime(e.now)
	e.Mini.FastForward(d)
}

// serverNow is the server's TIME.
func (e *env) serverNow(t *testing.T) time.Time {
	now, err := e.Universal.Time(context.Background()).Result()
	require.NoError(t, err)
	return now
}

// secondClient is another client on the same server: another connection
// pool and queue hub, like another process.
func (e *env) secondClient(t *testing.T) redis.UniversalClient {
	return e.NewClient(t)
}

func newEnv(t *testing.T, b redistest.Backend) *env {
	e := &env{Env: b.New(t)}
	if e.Mini != nil {
		e.now = time.Now()
		e.Mini.SetTime(e.now)
	}
	return e
}

// each runs f on miniredis and on a real redis-server.
func each(t *testing.T, f func(t *testing.T, env *env)) {
	for _, b := range redistest.AllBackends() {
		t.Run(b.Name, func(t *testing.T) { f(t, newEnv(t, b)) })
	}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func available(t *testing.T, s *semaphore.Semaphore) int64 {
	t.Helper()
	n, err := s.Available(context.Background())
	require.NoError(t, err)
	return n
}

// requireWithdrawn checks that a waiter that gave up has withdrawn its
// mark. The caller waits for the withdrawal only briefly
// (core.WithdrawWait) and it finishes in the background, so under load
// the check allows it the withdrawal's own bound.
func requireWithdrawn(t *testing.T, c redis.UniversalClient, name, why string) {
	t.Helper()
	require.Eventually(t, func() bool { return marks(t, c, name) == 0 },
		2*time.Second, 5*time.Millisecond, why)
}

// marks is how many waiters are marked in Redis (queued first come first
// served across processes) for the semaphore called name.
func marks(t *testing.T, c redis.UniversalClient, name string) int64 {
	t.Helper()
	n, err := c.ZCard(context.Background(), "{"+name+"}:waiters").Result()
	require.NoError(t, err)
	return n
}

// acquireAsync runs s.Acquire(ctx, n) on its own goroutine; the result
// arrives on the channel.
type result struct {
	ctx context.Context
	err error
	at  time.Time
}

func acquireAsync(s *semaphore.Semaphore, ctx context.Context, n int64) <-chan result {
	ch := make(chan result, 1)
	go func() {
		held, err := s.Acquire(ctx, n)
		ch <- result{held, err, time.Now()}
	}()
	return ch
}

func waitResult(t *testing.T, ch <-chan result, within time.Duration, what string) result {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(within):
		t.Fatalf("%s: not done within %v", what, within)
		return result{}
	}
}

func requireNotYet(t *testing.T, ch <-chan result, what string) {
	t.Helper()
	select {
	case r := <-ch:
		t.Fatalf("%s: got in too early (err %v)", what, r.err)
	default:
	}
}

func TestBoundRespected(t *testing.T) {
	each(t, func(t *testing.T, env *env) {
		ctx := ctxT(t)
		const size = 3
		s := semaphore.New(env.Universal, "bound", size)
		require.Equal(t, "bound", s.Name())
		require.EqualValues(t, size, s.Size())
		require.EqualValues(t, size, available(t, s), "a new semaphore is all free")

		var helds []context.Context
		for i := range size {
			held, err := s.TryAcquire(ctx, 1) // each from its own ctx: another owner
			require.NoError(t, err, "permit %d", i)
			helds = append(helds, held)
			require.EqualValues(t, size-1-i, available(t, s))
		}
		_, err := s.TryAcquire(ctx, 1)
		require.ErrorIs(t, err, semaphore.ErrNotAcquired, "size permits are out")
		_, err = semaphore.New(env.Universal, "bound", size, semaphore.WithWaitTimeout(100*time.Millisecond)).Acquire(ctx, 1)
		require.ErrorIs(t, err, semaphore.ErrNotAcquired, "Acquire waits, and the wait bound ends it")
		require.Zero(t, available(t, s))
		for _, h := range helds {
			require.NoError(t, s.Release(h))
		}
		require.EqualValues(t, size, available(t, s))

		// Concurrently, on one client: never more than size inside.
		var inside, maxInside atomic.Int32
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				for range 8 {
					h, err := s.Acquire(ctx, 1)
					if err != nil {
						t.Error(err)
						return
					}
					v := inside.Add(1)
					for m := maxInside.Load(); v > m && !maxInside.CompareAndSwap(m, v); m = maxInside.Load() {
					}
					time.Sleep(2 * time.Millisecond)
					inside.Add(-1)
					if err := s.Release(h); err != nil {
						t.Error(err)
					}
				}
			})
		}
		wg.Wait()
		t.Log("max inside", maxInside.Load())
		require.LessOrEqual(t, maxInside.Load(), int32(size))
		require.EqualValues(t, size, available(t, s), "every permit came back")
		requireWithdrawn(t, env.Universal, "bound", "no waiter mark left behind")
	})
}

func TestWeightedPermits(t *testing.T) {
	each(t, func(t *testing.T, env *env) {
		ctx := ctxT(t)
		s := semaphore.New(env.Universal, "weighted", 4)
		three, err := s.Acquire(ctx, 3)
		require.NoError(t, err)
		require.EqualValues(t, 1, available(t, s))

		_, err = s.TryAcquire(ctx, 2)
		require.ErrorIs(t, err, semaphore.ErrNotAcquired, "2 do not fit in the 1 left")
		_, err = semaphore.New(env.Universal, "weighted", 4, semaphore.WithWaitTimeout(100*time.Millisecond)).Acquire(ctx, 2)
		require.ErrorIs(t, err, semaphore.ErrNotAcquired, "Acquire(2) waits")
		one, err := s.TryAcquire(ctx, 1)
		require.NoError(t, err, "1 fits")
		require.Zero(t, available(t, s))
		require.NoError(t, s.Release(one))

		// A waiter for 2 blocks a later request for 1, though 1 is free
		// (golang.org/x/sync/semaphore's first come first served).
		two := acquireAsync(s, ctx, 2)
		require.Eventually(t, func() bool { return marks(t, env.Universal, "weighted") == 1 },
			5*time.Second, 5*time.Millisecond, "the waiter for 2 queues in Redis")
		requireNotYet(t, two, "Acquire(2) with 1 free")
		_, err = s.TryAcquire(ctx, 1)
		require.ErrorIs(t, err, semaphore.ErrNotAcquired, "a later small request does not pass the waiting head")

		require.NoError(t, s.Release(three))
		r := waitResult(t, two, 5*time.Second, "Acquire(2) after the release of 3")
		require.NoError(t, r.err)
		require.EqualValues(t, 2, available(t, s))
		one, err = s.TryAcquire(ctx, 1)
		require.NoError(t, err, "the head got in: no one waits ahead any more")
		require.NoError(t, s.Release(one))
		require.NoError(t, s.Release(r.ctx))
		require.EqualValues(t, 4, available(t, s))
	})
}

func TestTryAcquireContention(t *testing.T) {
	each(t, func(t *testing.T, env *env) {
		ctx := ctxT(t)
		s := semaphore.New(env.Universal, "pool", 2)
		held, err := s.Acquire(ctx, 2)
		require.NoError(t, err)

		// Another process (client) and this one both see it full.
		for _, c := range []redis.UniversalClient{env.Universal, env.secondClient(t)} {
			_, err = semaphore.New(c, "pool", 2).TryAcquire(ctx, 1)
			require.ErrorIs(t, err, semaphore.ErrNotAcquired)
			require.ErrorContains(t, err, "tryacquire", "errors name the operation")
			require.ErrorContains(t, err, `semaphore "pool"`, "errors name the semaphore")
		}
		_, err = semaphore.New(env.Universal, "pool", 2, semaphore.WithWaitTimeout(50*time.Millisecond)).Acquire(ctx, 1)
		require.ErrorIs(t, err, semaphore.ErrNotAcquired)
		require.ErrorContains(t, err, `acquire semaphore "pool"`)
		requireWithdrawn(t, env.Universal, "pool", "a Try never marks, a waiter that gave up withdrew")

		require.NoError(t, s.Release(held))
		again, err := s.TryAcquire(ctx, 2)
		require.NoError(t, err)
		require.NoError(t, s.Release(again))
	})
}

// TestReleaseWakesWaiterPromptly: the waiter is woken by the release (the
// local hand-off, or the pub/sub message for another process), not by its
// fallback timer, which is a third of the 30 s lease.
func TestReleaseWakesWaiterPromptly(t *testing.T) {
	each(t, func(t *testing.T, env *env) {
		for _, where := range []string{"same client", "other client"} {
			t.Run(where, func(t *testing.T) {
				ctx := ctxT(t)
				name := "prompt:" + where
				s := semaphore.New(env.Universal, name, 2)
				waiterClient := env.Universal
				if where == "other client" {
					waiterClient = env.secondClient(t)
				}
				held, err := s.Acquire(ctx, 2)
				require.NoError(t, err)

				ch := acquireAsync(semaphore.New(waiterClient, name, 2), ctx, 1)
				// Marked in Redis: the waiter is subscribed and its try
				// after subscribing failed; it now waits for a message.
				require.Eventually(t, func() bool { return marks(t, env.Universal, name) == 1 },
					5*time.Second, 5*time.Millisecond)
				subs, err := env.Subscribers(ctx, "redisson_sc:{"+name+"}")
				require.NoError(t, err)
				require.EqualValues(t, 1, subs, "one subscription for the waiter's client")
				requireNotYet(t, ch, "waiter while all permits are held")

				start := time.Now()
				require.NoError(t, s.Release(held))
				r := waitResult(t, ch, 3*time.Second, "waiter after release")
				require.NoError(t, r.err)
				t.Logf("%s: waiter in %v after the release (fallback timer: 10 s)", where, r.at.Sub(start))
				require.NoError(t, semaphore.New(waiterClient, name, 2).Release(r.ctx))
				require.EqualValues(t, 2, available(t, s))
				require.Zero(t, marks(t, env.Universal, name))
			})
		}
	})
}

func TestReleaseNotHeld(t *testing.T) {
	each(t, func(t *testing.T, env *env) {
		ctx := ctxT(t)
		s := semaphore.New(env.Universal, "nh", 3)
		err := s.Release(ctx)
		require.ErrorIs(t, err, semaphore.ErrNotHeld, "never acquired")
		require.ErrorContains(t, err, `release semaphore "nh"`)

		held, err := s.Acquire(ctx, 2)
		require.NoError(t, err)
		require.ErrorIs(t, s.Release(context.Background()), semaphore.ErrNotHeld, "a ctx without a permit")
		other := semaphore.New(env.Universal, "other", 3)
		otherHeld, err := other.Acquire(ctx, 1)
		require.NoError(t, err)
		require.ErrorIs(t, s.Release(otherHeld), semaphore.ErrNotHeld, "a permit of another semaphore")
		require.ErrorIs(t, semaphore.New(env.secondClient(t), "nh", 3).Release(held), semaphore.ErrNotHeld,
			"a permit taken through another client (another process)")
		require.NoError(t, other.Release(otherHeld))
		require.EqualValues(t, 1, available(t, s), "the permit is untouched")
		require.NoError(t, held.Err())

		// Another handle of the same name on the same client releases it.
		require.NoError(t, semaphore.New(env.Universal, "nh", 3).Release(held))
		require.ErrorIs(t, context.Cause(held), context.Canceled, "the permit's context ends at release")
		require.EqualValues(t, 3, available(t, s))

		// Double release: ErrNotHeld, and a new holder is untouched.
		next, err := s.Acquire(ctx, 3)
		require.NoError(t, err)
		err = s.Release(held)
		require.ErrorIs(t, err, semaphore.ErrNotHeld)
		require.ErrorContains(t, err, "release")
		require.Zero(t, available(t, s))
		require.NoError(t, next.Err())
		require.NoError(t, s.Release(next))
		require.ErrorIs(t, s.Release(next), semaphore.ErrNotHeld)
		require.EqualValues(t, 3, available(t, s))
	})
}

// TestNestedAcquireIsASecondPermit: permits are not reentrant holds: an
// Acquire on an acquired ctx takes a second permit, and Release of the
// inner ctx gives back only the inner one.
func TestNestedAcquireIsASecondPermit(t *testing.T) {
	each(t, func(t *testing.T, env *env) {
		ctx := ctxT(t)
		s := semaphore.New(env.Universal, "nested", 4)
		outer, err := s.Acquire(ctx, 1)
		require.NoError(t, err)
		inner, err := s.Acquire(outer, 2)
		require.NoError(t, err)
		require.EqualValues(t, 1, available(t, s))
		n, err := env.Universal.ZCard(ctx, "{nested}:permits").Result()
		require.NoError(t, err)
		require.EqualValues(t, 2, n, "two permit ids")

		require.NoError(t, s.Release(inner))
		require.ErrorIs(t, context.Cause(inner), context.Canceled)
		require.NoError(t, outer.Err(), "the outer permit is untouched")
		require.EqualValues(t, 3, available(t, s))
		require.ErrorIs(t, s.Release(inner), semaphore.ErrNotHeld)
		require.EqualValues(t, 3, available(t, s), "a second inner release does not take the outer one")

		require.NoError(t, s.Release(outer))
		require.EqualValues(t, 4, available(t, s))
	})
}

// TestCrashedHolderPermitsReturnAfterLease: a holder with a fixed lease
// that never releases (it crashed) gives its permits back when the lease
// ends on the server, and not before.
func TestCrashedHolderPermitsReturnAfterLease(t *testing.T) {
	each(t, func(t *testing.T, env *env) {
		ctx := ctxT(t)
		const lease = 500 * time.Millisecond
		crashed := semaphore.New(env.secondClient(t), "crash", 4, semaphore.WithLeaseTime(lease))
		s := semaphore.New(env.Universal, "crash", 4)

		start := time.Now()
		held, err := crashed.Acquire(ctx, 3)
		require.NoError(t, err)
		// The permits must not come back before the lease ends. On
		// miniredis TIME stands still until advance. On a real server a
		// check that finds them back is wrong only if it returned before
		// start+lease: past that, its script may have run after the
		// expiry (a stalled test), and it proves nothing either way.
		tooEarly := func() bool { return env.Mini != nil || time.Since(start) < lease }
		if av := available(t, s); av != 1 {
			require.False(t, tooEarly(), "available %d %v after the acquire", av, time.Since(start))
		}
		if env.Mini == nil {
			ps, err := env.Universal.ZRangeWithScores(ctx, "{crash}:permits", 0, 0).Result()
			require.NoError(t, err)
			require.Len(t, ps, 1)
			left := time.UnixMilli(int64(ps[0].Score)).Sub(env.serverNow(t))
			require.LessOrEqual(t, left, lease, "the permit expires with the fixed lease, by server time")
		}

		ch := acquireAsync(s, ctx, 2)
		env.advance(lease / 2)
		if env.Mini != nil {
			// TIME stands at half the lease: let the waiter queue and
			// retry on its fallback timer (a third of the lease) a few
			// times; it must not get in.
			require.Eventually(t, func() bool { return marks(t, env.Universal, "crash") == 1 },
				5*time.Second, 5*time.Millisecond)
			time.Sleep(lease)
			requireNotYet(t, ch, "waiter at half the lease")
		}
		// 2 fit only once the crashed holder's 3 are back.
		if other, err := s.TryAcquire(ctx, 2); err == nil {
			require.False(t, tooEarly(), "TryAcquire got in %v after the acquire", time.Since(start))
			require.NoError(t, s.Release(other))
		} else {
			require.ErrorIs(t, err, semaphore.ErrNotAcquired)
		}

		env.advance(lease/2 + 50*time.Millisecond)
		r := waitResult(t, ch, 5*time.Second, "waiter after the crashed holder's lease")
		require.NoError(t, r.err)
		waited := r.at.Sub(start)
		t.Logf("waiter in %v after the crashed holder's acquire (lease %v)", waited, lease)
		if env.Mini == nil {
			// Its script ran at server time >= the expiry >= start+lease
			// (the server's and the test's clocks are one machine's).
			require.GreaterOrEqual(t, waited, lease-5*time.Millisecond, "the waiter got in before the lease ended")
		}
		require.EqualValues(t, 2, available(t, s), "the 3 came back; the waiter holds 2")
		require.NoError(t, s.Release(r.ctx))
		require.EqualValues(t, 4, available(t, s))

		// The crashed holder's process, were it alive, is told.
		select {
		case <-held.Done():
		case <-time.After(5 * time.Second):
			t.Fatal("holder of an ended fixed lease not told")
		}
		require.ErrorIs(t, context.Cause(held), semaphore.ErrLockLost)
		require.ErrorIs(t, crashed.Release(held), semaphore.ErrLockLost)
		require.EqualValues(t, 4, available(t, s), "its late release took nothing")
	})
}

// TestExpiredPermitReleaseIsLost: a permit whose lease ran out on the
// server and was reclaimed before its holder noticed: Release says
// ErrLockLost and does not take the permits of whoever has them now. The
// holder's watchdog runs on a clock that stands still, so only Redis knows.
func TestExpiredPermitReleaseIsLost(t *testing.T) {
	each(t, func(t *testing.T, env *env) {
		ctx := ctxT(t)
		const lease = 300 * time.Millisecond
		wd := watchdog.New(watchdog.WithClock(watchdog.NewFakeClock(time.Now())))
		old := semaphore.New(env.Universal, "expired", 2, semaphore.WithLeaseTime(lease), semaphore.WithWatchdog(wd))
		held, err := old.Acquire(ctx, 2)
		require.NoError(t, err)
		env.advance(lease + 50*time.Millisecond)

		s := semaphore.New(env.Universal, "expired", 2)
		now, err := s.TryAcquire(ctx, 2)
		require.NoError(t, err, "the expired permits were reclaimed")
		require.NoError(t, held.Err(), "the holder's watchdog has not noticed")
		err = old.Release(held)
		require.ErrorIs(t, err, semaphore.ErrLockLost)
		require.ErrorContains(t, err, `release semaphore "expired"`)
		require.Zero(t, available(t, s), "the new holder's permits are untouched")
		require.NoError(t, s.Release(now))
		require.EqualValues(t, 2, available(t, s))
	})
}

// TestWatchdogKeepsPermitThroughFiveLeases: a renewed permit is not
// reclaimed however long it is held.
func TestWatchdogKeepsPermitThroughFiveLeases(t *testing.T) {
	t.Run("redis", func(t *testing.T) {
		srv := redistest.StartServer(t)
		rdb := srv.Client(t)
		ctx := ctxT(t)
		const timeout = 300 * time.Millisecond
		s := semaphore.New(rdb, "wd", 4, semaphore.WithWatchdogTimeout(timeout))
		held, err := s.Acquire(ctx, 3)
		require.NoError(t, err)
		end := time.Now().Add(5*timeout + timeout/2)
		for time.Now().Before(end) {
			require.NoError(t, held.Err())
			require.EqualValues(t, 1, available(t, s), "the renewed permit is not reclaimed")
			time.Sleep(25 * time.Millisecond)
		}
		_, err = s.TryAcquire(ctx, 2)
		require.ErrorIs(t, err, semaphore.ErrNotAcquired)
		require.NoError(t, s.Release(held))
		require.EqualValues(t, 4, available(t, s))
	})
	// On miniredis the watchdog runs on a fake clock and the server's TIME
	// (which the renewal script and the reclaiming compare expiries with)
	// is moved in step with SetTime: without renewals the permit would be
	// reclaimed at the third step.
	t.Run("miniredis", func(t *testing.T) {
		mr, rdb := redistest.Miniredis(t)
		ctx := ctxT(t)
		serverNow := time.Unix(1_700_000_000, 0)
		mr.SetTime(serverNow)
		clk := watchdog.NewFakeClock(serverNow)
		wd := watchdog.New(watchdog.WithClock(clk))
		s := semaphore.New(rdb, "wd", 4, semaphore.WithWatchdog(wd)) // default 30 s lease
		held, err := s.Acquire(ctx, 3)
		require.NoError(t, err)
		for i := 1; i <= 15; i++ { // 15 renewals of 10 s = 5 leases of 30 s
			require.Eventually(t, func() bool { return clk.Pending() > 0 }, 5*time.Second, time.Millisecond)
			clk.Advance(10 * time.Second)
			require.Eventually(t, func() bool { return wd.Stats().Renewed == int64(i) }, 5*time.Second, time.Millisecond,
				"renewal %d: %+v pending %d", i, wd.Stats(), clk.Pending())
			serverNow = serverNow.Add(10 * time.Second)
			mr.SetTime(serverNow)
			mr.FastForward(10 * time.Second)
			require.EqualValues(t, 1, available(t, s), "after %d renewals", i)
			score, err := rdb.ZScore(ctx, "{wd}:permits", mustPermitID(t, rdb, "wd")).Result()
			require.NoError(t, err)
			require.Greater(t, time.UnixMilli(int64(score)).Sub(serverNow), 15*time.Second, "after %d renewals", i)
		}
		require.NoError(t, held.Err())
		_, err = s.TryAcquire(ctx, 2)
		require.ErrorIs(t, err, semaphore.ErrNotAcquired)
		require.NoError(t, s.Release(held))
		require.EqualValues(t, 4, available(t, s))
		require.Zero(t, wd.Stats().Held)
	})
}

func mustPermitID(t *testing.T, c redis.UniversalClient, name string) string {
	ids, err := c.ZRange(context.Background(), "{"+name+"}:permits", 0, -1).Result()
	require.NoError(t, err)
	require.Len(t, ids, 1)
	return ids[0]
}

// TestLostPermitReportedThroughContext: when the permit is gone from Redis
// the watchdog's next renewal finds out and ends the permit's context with
// ErrLockLost.
func TestLostPermitReportedThroughContext(t *testing.T) {
	t.Run("miniredis", func(t *testing.T) {
		mr, rdb := redistest.Miniredis(t)
		ctx := ctxT(t)
		clk := watchdog.NewFakeClock(time.Unix(1_700_000_000, 0))
		wd := watchdog.New(watchdog.WithClock(clk))
		s := semaphore.New(rdb, "lost", 3, semaphore.WithWatchdog(wd))
		held, err := s.Acquire(ctx, 2)
		require.NoError(t, err)
		mr.Del("{lost}:permits")
		require.Eventually(t, func() bool { return clk.Pending() > 0 }, 5*time.Second, time.Millisecond)
		clk.Advance(10 * time.Second) // one renewal interval of the 30 s lease
		select {
		case <-held.Done():
		case <-time.After(5 * time.Second):
			t.Fatal("deleted permit not reported within one renewal interval")
		}
		require.ErrorIs(t, context.Cause(held), semaphore.ErrLockLost)
		err = s.Release(held)
		require.ErrorIs(t, err, semaphore.ErrLockLost)
		require.ErrorContains(t, err, `semaphore "lost"`)
		require.ErrorIs(t, s.Release(held), semaphore.ErrLockLost, "and again")
		require.Zero(t, wd.Stats().Held)
	})
	t.Run("redis", func(t *testing.T) {
		for _, how := range []string{"DEL permits", "FLUSHALL"} {
			t.Run(how, func(t *testing.T) {
				srv := redistest.StartServer(t)
				rdb := srv.Client(t)
				ctx := ctxT(t)
				const timeout = 900 * time.Millisecond // renewed every 300 ms
				s := semaphore.New(rdb, "lost", 3, semaphore.WithWatchdogTimeout(timeout))
				held, err := s.Acquire(ctx, 2)
				require.NoError(t, err)
				if how == "FLUSHALL" {
					require.NoError(t, rdb.FlushAll(ctx).Err())
				} else {
					require.NoError(t, rdb.Del(ctx, "{lost}:permits").Err())
				}
				start := time.Now()
				select {
				case <-held.Done():
				case <-time.After(5 * time.Second):
					t.Fatal("lost permit not reported")
				}
				took := time.Since(start)
				t.Logf("lost permit reported after %v (renewal interval %v)", took, timeout/3)
				require.Less(t, took, timeout, "reported before the lease would have lapsed")
				require.ErrorIs(t, context.Cause(held), semaphore.ErrLockLost)
				require.ErrorIs(t, s.Release(held), semaphore.ErrLockLost)
			})
		}
	})
}

// TestLostPermitsComeBack: permits whose holder lost them (here the
// permits zset was deleted under them) are free again; the semaphore does
// not keep counting them as used.
func TestLostPermitsComeBack(t *testing.T) {
	each(t, func(t *testing.T, env *env) {
		ctx := ctxT(t)
		clk := watchdog.NewFakeClock(time.Unix(1_700_000_000, 0))
		wd := watchdog.New(watchdog.WithClock(clk))
		s := semaphore.New(env.Universal, "leak", 3, semaphore.WithWatchdog(wd))
		held, err := s.Acquire(ctx, 2)
		require.NoError(t, err)
		require.NoError(t, env.Universal.Del(ctx, "{leak}:permits").Err())
		require.ErrorIs(t, s.Release(held), semaphore.ErrLockLost)
		require.EqualValues(t, 3, available(t, s), "no live permit, yet permits are counted used")
		all, err := s.TryAcquire(ctx, 3)
		require.NoError(t, err)
		require.NoError(t, s.Release(all))
	})
}

func TestSizeMismatch(t *testing.T) {
	each(t, func(t *testing.T, env *env) {
		ctx := ctxT(t)
		s4 := semaphore.New(env.Universal, "sz", 4)
		s5 := semaphore.New(env.secondClient(t), "sz", 5)
		// Before any acquire nothing is recorded: each sees its own size.
		require.EqualValues(t, 5, available(t, s5))
		require.EqualValues(t, 4, available(t, s4))
		require.Zero(t, env.Universal.DBSize(ctx).Val(), "Available records nothing")

		held4, err := s4.Acquire(ctx, 1)
		require.NoError(t, err, "the first acquire records size 4")
		size, err := env.Universal.HGet(ctx, "sz", "size").Int64()
		require.NoError(t, err)
		require.EqualValues(t, 4, size)

		_, err = s5.Acquire(ctx, 1)
		requireMismatch(t, err, "acquire", 4, 5)
		_, err = s5.TryAcquire(ctx, 5)
		requireMismatch(t, err, "tryacquire", 4, 5)
		_, err = s5.Available(ctx)
		requireMismatch(t, err, "available", 4, 5)
		require.EqualValues(t, 3, available(t, s4), "the disagreeing Semaphore took nothing")
		require.Zero(t, marks(t, env.Universal, "sz"))

		// Resize changes it on purpose: now s5 agrees and s4 does not.
		require.NoError(t, s5.Resize(ctx, 5))
		require.EqualValues(t, 5, s5.Size())
		require.EqualValues(t, 4, available(t, s5), "the permit taken under size 4 is still held")
		held5, err := s5.Acquire(ctx, 4)
		require.NoError(t, err)
		_, err = s4.Acquire(ctx, 1)
		requireMismatch(t, err, "acquire", 5, 4)
		_, err = s4.Available(ctx)
		requireMismatch(t, err, "available", 5, 4)
		require.NoError(t, s4.Release(held4), "a release needs no agreement on the size")
		require.NoError(t, s5.Release(held5))
		require.EqualValues(t, 5, available(t, s5))

		// A Semaphore that resizes itself agrees again.
		require.NoError(t, s4.Resize(ctx, 4))
		require.EqualValues(t, 4, available(t, s4))
		_, err = s5.Available(ctx)
		requireMismatch(t, err, "available", 4, 5)
	})
}

func requireMismatch(t *testing.T, err error, op string, recorded, mine int64) {
	t.Helper()
	require.ErrorIs(t, err, semaphore.ErrSizeMismatch)
	require.ErrorContains(t, err, fmt.Sprintf(`%s semaphore "sz"`, op))
	require.ErrorContains(t, err, fmt.Sprintf("size %d", recorded), "names the recorded size")
	require.ErrorContains(t, err, fmt.Sprintf("built with %d", mine), "names this Semaphore's size")
}

// TestResizeShrinkKeepsHeldPermits: permits held beyond a smaller size stay
// until released; meanwhile nothing is free (not a negative count).
func TestResizeShrinkKeepsHeldPermits(t *testing.T) {
	each(t, func(t *testing.T, env *env) {
		ctx := ctxT(t)
		s := semaphore.New(env.Universal, "shrink", 4)
		held, err := s.Acquire(ctx, 3)
		require.NoError(t, err)
		require.NoError(t, s.Resize(ctx, 2))
		require.EqualValues(t, 2, s.Size())
		require.NoError(t, held.Err(), "the held permits stay")
		_, err = s.TryAcquire(ctx, 1)
		require.ErrorIs(t, err, semaphore.ErrNotAcquired)
		_, err = s.TryAcquire(ctx, 3)
		require.ErrorIs(t, err, semaphore.ErrInvalidArgument, "n above the new size")
		require.Zero(t, available(t, s), "nothing is free while more than size is held")
		require.NoError(t, s.Release(held))
		require.EqualValues(t, 2, available(t, s))
	})
}

// TestResizeLetsWaiterIn: a waiter of the Semaphore that grows is let in
// by the new size (Resize wakes waiters and "this Semaphore uses the new
// size from now on").
func TestResizeLetsWaiterIn(t *testing.T) {
	each(t, func(t *testing.T, env *env) {
		ctx := ctxT(t)
		s := semaphore.New(env.Universal, "grow", 1)
		held, err := s.Acquire(ctx, 1)
		require.NoError(t, err)
		ch := acquireAsync(s, ctx, 1)
		require.Eventually(t, func() bool { return marks(t, env.Universal, "grow") == 1 },
			5*time.Second, 5*time.Millisecond)
		require.NoError(t, s.Resize(ctx, 2))
		r := waitResult(t, ch, 3*time.Second, "waiter after Resize(2)")
		require.NoError(t, r.err)
		require.Zero(t, available(t, s))
		require.NoError(t, s.Release(r.ctx))
		require.NoError(t, s.Release(held))
		require.EqualValues(t, 2, available(t, s))
	})
}

func TestBadInputWritesNothing(t *testing.T) {
	each(t, func(t *testing.T, env *env) {
		ctx := ctxT(t)
		cases := map[string]*semaphore.Semaphore{
			"nil client":       semaphore.New(nil, "a", 2),
			"empty name":       semaphore.New(env.Universal, "", 2),
			"zero size":        semaphore.New(env.Universal, "a", 0),
			"negative size":    semaphore.New(env.Universal, "a", -3),
			"zero lease":       semaphore.New(env.Universal, "a", 2, semaphore.WithLeaseTime(0)),
			"negative lease":   semaphore.New(env.Universal, "a", 2, semaphore.WithLeaseTime(-time.Second)),
			"zero watchdog":    semaphore.New(env.Universal, "a", 2, semaphore.WithWatchdogTimeout(0)),
			"negative wait":    semaphore.New(env.Universal, "a", 2, semaphore.WithWaitTimeout(-1)),
			"zero unlock wait": semaphore.New(env.Universal, "a", 2, semaphore.WithUnlockTimeout(0)),
		}
		for name, s := range cases {
			_, err := s.Acquire(ctx, 1)
			require.ErrorIs(t, err, semaphore.ErrInvalidArgument, name)
			require.ErrorContains(t, err, "acquire semaphore", name)
			_, err = s.TryAcquire(ctx, 1)
			require.ErrorIs(t, err, semaphore.ErrInvalidArgument, name)
			require.ErrorIs(t, s.Release(ctx), semaphore.ErrInvalidArgument, name)
			_, err = s.Available(ctx)
			require.ErrorIs(t, err, semaphore.ErrInvalidArgument, name)
			require.ErrorIs(t, s.Resize(ctx, 2), semaphore.ErrInvalidArgument, name)
		}
		_, err := semaphore.New(nil, "a", 2).Acquire(ctx, 1)
		require.ErrorContains(t, err, "nil redis client")
		_, err = semaphore.New(env.Universal, "a", 0).Acquire(ctx, 1)
		require.ErrorContains(t, err, "size 0")

		s := semaphore.New(env.Universal, "a", 4)
		for _, n := range []int64{0, -1, 5} {
			start := time.Now()
			_, err := s.Acquire(ctx, n)
			require.ErrorIs(t, err, semaphore.ErrInvalidArgument, "Acquire(%d)", n)
			require.ErrorContains(t, err, fmt.Sprintf("n %d", n))
			require.Less(t, time.Since(start), time.Second, "at once, not a wait forever")
			_, err = s.TryAcquire(ctx, n)
			require.ErrorIs(t, err, semaphore.ErrInvalidArgument, "TryAcquire(%d)", n)
		}
		require.ErrorIs(t, s.Resize(ctx, 0), semaphore.ErrInvalidArgument)
		require.ErrorIs(t, s.Resize(ctx, -1), semaphore.ErrInvalidArgument)
		// A nil ctx is refused, not a panic.
		{
			_, err = s.Acquire(nil, 1) //lint:ignore SA1012 a nil ctx on purpose: it must be refused, not panic
			require.ErrorIs(t, err, semaphore.ErrInvalidArgument)
			require.ErrorContains(t, err, "nil context")
			_, err = s.TryAcquire(nil, 1) //lint:ignore SA1012 a nil ctx on purpose: it must be refused, not panic
			require.ErrorIs(t, err, semaphore.ErrInvalidArgument)
			require.ErrorIs(t, s.Release(nil), semaphore.ErrInvalidArgument) //lint:ignore SA1012 a nil ctx on purpose: it must be refused, not panic
			_, err = s.Available(nil)                                        //lint:ignore SA1012 a nil ctx on purpose: it must be refused, not panic
			require.ErrorIs(t, err, semaphore.ErrInvalidArgument)
			require.ErrorIs(t, s.Resize(nil, 2), semaphore.ErrInvalidArgument) //lint:ignore SA1012 a nil ctx on purpose: it must be refused, not panic
		}
		n, err := env.Universal.DBSize(ctx).Result()
		require.NoError(t, err)
		require.Zero(t, n, "nothing written to Redis")
	})
}

// With WithHoldScopedToContext, permits go with their acquiring context.
func TestAcquiringContextEndedReleasesPermit(t *testing.T) {
	each(t, func(t *testing.T, env *env) {
		parent, cancel := context.WithCancel(ctxT(t))
		s := semaphore.New(env.Universal, "scoped", 3, semaphore.WithHoldScopedToContext())
		held, err := s.Acquire(parent, 2)
		require.NoError(t, err)
		require.EqualValues(t, 1, available(t, s))
		cancel()
		require.Eventually(t, func() bool {
			n, err := s.Available(context.Background())
			return err == nil && n == 3
		}, 5*time.Second, 5*time.Millisecond, "released in the background")
		require.ErrorIs(t, held.Err(), context.Canceled)
		require.NoError(t, s.Release(held), "Release of a permit its context ended is nil")
		require.ErrorIs(t, s.Release(held), semaphore.ErrNotHeld, "but only once")
		require.EqualValues(t, 3, available(t, s))
	})
}

// By default the acquiring context bounds the wait only.
func TestAcquiringContextBoundsWaitOnly(t *testing.T) {
	each(t, func(t *testing.T, env *env) {
		s := semaphore.New(env.Universal, "waitonly", 3)
		wait, cancel := context.WithTimeout(ctxT(t), 150*time.Millisecond)
		held, err := s.Acquire(wait, 2)
		require.NoError(t, err)
		<-wait.Done()
		cancel()
		time.Sleep(100 * time.Millisecond)
		require.NoError(t, held.Err(), "the permits outlive the wait's deadline")
		require.EqualValues(t, 1, available(t, s))
		require.NoError(t, s.Release(held))
		require.EqualValues(t, 3, available(t, s))
	})
}

func TestReleaseWorksOnDoneContext(t *testing.T) {
	each(t, func(t *testing.T, env *env) {
		ctx := ctxT(t)
		s := semaphore.New(env.Universal, "done", 2)
		held, err := s.Acquire(ctx, 2)
		require.NoError(t, err)
		derived, cancel := context.WithCancel(held)
		cancel()
		require.NoError(t, s.Release(derived), "a done ctx derived from the permit still carries it")
		require.EqualValues(t, 2, available(t, s))
		require.ErrorIs(t, s.Release(held), semaphore.ErrNotHeld)
	})
}

// TestWaiterThatGivesUpDoesNotBlock: a waiter that gives up (its wait
// bound passed, or its context ended) withdraws its place in the queue;
// it does not hold back later requests for the rest of its mark's lease.
func TestWaiterThatGivesUpDoesNotBlock(t *testing.T) {
	each(t, func(t *testing.T, env *env) {
		ctx := ctxT(t)
		s := semaphore.New(env.Universal, "giveup", 2)
		held, err := s.Acquire(ctx, 2)
		require.NoError(t, err)

		_, err = semaphore.New(env.Universal, "giveup", 2, semaphore.WithWaitTimeout(200*time.Millisecond)).Acquire(ctx, 1)
		require.ErrorIs(t, err, semaphore.ErrNotAcquired)
		requireWithdrawn(t, env.Universal, "giveup", "the timed-out waiter withdrew")

		dctx, dcancel := context.WithTimeout(ctx, 200*time.Millisecond)
		_, err = s.Acquire(dctx, 1)
		dcancel()
		require.ErrorIs(t, err, context.DeadlineExceeded, "the ctx deadline bounds the wait")
		requireWithdrawn(t, env.Universal, "giveup", "the waiter past its deadline withdrew")

		wctx, cancel := context.WithCancel(ctx)
		ch := acquireAsync(semaphore.New(env.secondClient(t), "giveup", 2), wctx, 2)
		require.Eventually(t, func() bool { return marks(t, env.Universal, "giveup") == 1 },
			5*time.Second, 5*time.Millisecond)
		cancel()
		r := waitResult(t, ch, 5*time.Second, "cancelled waiter")
		require.ErrorIs(t, r.err, context.Canceled)
		requireWithdrawn(t, env.Universal, "giveup", "the cancelled waiter withdrew")

		require.NoError(t, s.Release(held))
		one, err := s.TryAcquire(ctx, 1)
		require.NoError(t, err, "nobody waits ahead")
		require.NoError(t, s.Release(one))
	})
}

// TestNoStarvationOfLargeRequest: Acquire(size) gets in within a bounded
// time though goroutines on two clients keep taking single permits.
func TestNoStarvationOfLargeRequest(t *testing.T) {
	each(t, func(t *testing.T, env *env) {
		ctx := ctxT(t)
		const size = 3
		clients := []redis.UniversalClient{env.Universal, env.secondClient(t)}
		var (
			stop        atomic.Bool
			smallInside atomic.Int32
			smallOps    atomic.Int64
			bigInside   atomic.Bool
			overlaps    atomic.Int32
			wg          sync.WaitGroup
		)
		for _, c := range clients {
			s := semaphore.New(c, "starve", size)
			for range 3 {
				wg.Go(func() {
					for !stop.Load() {
						held, err := s.Acquire(ctx, 1)
						if err != nil {
							t.Error(err)
							return
						}
						if smallInside.Add(1) > size || bigInside.Load() {
							overlaps.Add(1)
						}
						smallOps.Add(1)
						time.Sleep(time.Millisecond)
						smallInside.Add(-1)
						if err := s.Release(held); err != nil {
							t.Error(err)
							return
						}
					}
				})
			}
		}
		defer func() { stop.Store(true); wg.Wait() }()
		require.Eventually(t, func() bool { return smallOps.Load() >= 30 }, 10*time.Second, time.Millisecond,
			"the stream of small requests is flowing")

		big := semaphore.New(clients[0], "starve", size)
		for round := range 3 {
			before := smallOps.Load()
			start := time.Now()
			held, err := big.Acquire(ctx, size)
			require.NoError(t, err)
			waited := time.Since(start)
			bigInside.Store(true)
			if n := smallInside.Load(); n != 0 {
				overlaps.Add(1)
			}
			t.Logf("round %d: Acquire(%d) waited %v while %d small acquisitions went through",
				round, size, waited, smallOps.Load()-before)
			require.Less(t, waited, 3*time.Second, "the large request is starved")
			time.Sleep(5 * time.Millisecond)
			bigInside.Store(false)
			require.NoError(t, big.Release(held))
			require.Eventually(t, func() bool { return smallOps.Load() > before+10 }, 10*time.Second, time.Millisecond,
				"the small ones flow again")
		}
		stop.Store(true)
		wg.Wait()
		require.Zero(t, overlaps.Load(), "more than size inside at once")
		require.EqualValues(t, size, available(t, big))
		require.Zero(t, marks(t, env.Universal, "starve"))
	})
}

// acquireSpans returns the ended acquire spans, in order, and counts the
// release spans (one per release of a traced hold).
func acquireSpans(rec *tracetest.SpanRecorder) (spans []sdktrace.ReadOnlySpan, releases int) {
	for _, s := range rec.Ended() {
		if strings.HasPrefix(s.Name(), "release ") {
			releases++
			continue
		}
		spans = append(spans, s)
	}
	return spans, releases
}

func TestAcquireSpan(t *testing.T) {
	each(t, func(t *testing.T, env *env) {
		ctx := ctxT(t)
		rec := tracetest.NewSpanRecorder()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
		defer func() { _ = tp.Shutdown(context.Background()) }()
		s := semaphore.New(env.Universal, "traced", 3, semaphore.WithTracerProvider(tp))
		held, err := s.Acquire(ctx, 2)
		require.NoError(t, err)
		_, err = s.TryAcquire(ctx, 2)
		require.ErrorIs(t, err, semaphore.ErrNotAcquired)
		one, err := s.TryAcquire(ctx, 1)
		require.NoError(t, err)
		require.NoError(t, s.Release(one))
		require.NoError(t, s.Release(held))

		spans, releases := acquireSpans(rec)
		require.Len(t, spans, 3, "one span per acquire")
		require.Equal(t, 2, releases, "one span per release")
		for _, sp := range spans {
			require.Equal(t, tracing.SpanAcquireSemaphore, sp.Name())
			require.Equal(t, "acquire semaphore", sp.Name())
			require.Equal(t, tracing.ScopeName, sp.InstrumentationScope().Name)
			a := attrs(sp.Attributes())
			require.Equal(t, "traced", a[tracing.LockName].AsString())
			require.Equal(t, "semaphore", a[tracing.Primitive].AsString())
			require.EqualValues(t, 3, a[tracing.Size].AsInt64())
			_, hasWait := a[tracing.WaitMillis]
			require.True(t, hasWait, "lock.wait_ms")
			require.NotEmpty(t, a[tracing.Owner].AsString())
		}
		a := attrs(spans[0].Attributes())
		require.EqualValues(t, 2, a[tracing.Permits].AsInt64())
		require.Equal(t, tracing.OutcomeAcquired, a[tracing.Outcome].AsString())
		require.EqualValues(t, 30000, a[tracing.LeaseMillis].AsInt64())
		require.GreaterOrEqual(t, a[tracing.WaitMillis].AsFloat64(), 0.0)
		try := attrs(spans[1].Attributes())
		require.EqualValues(t, 2, try[tracing.Permits].AsInt64())
		require.Equal(t, tracing.OutcomeNotAcquired, try[tracing.Outcome].AsString())
		require.Equal(t, codes.Unset, spans[1].Status().Code, "contention on a Try is not an error")
		require.EqualValues(t, 1, attrs(spans[2].Attributes())[tracing.Permits].AsInt64())
		require.Equal(t, tracing.OutcomeAcquired, attrs(spans[2].Attributes())[tracing.Outcome].AsString())

		// A size disagreement is an error on the span. Redis records the
		// size while a permit is held (untraced here).
		kept, err := semaphore.New(env.Universal, "traced", 3).Acquire(ctx, 1)
		require.NoError(t, err)
		_, err = semaphore.New(env.Universal, "traced", 4, semaphore.WithTracerProvider(tp)).Acquire(ctx, 1)
		require.ErrorIs(t, err, semaphore.ErrSizeMismatch)
		require.NoError(t, semaphore.New(env.Universal, "traced", 3).Release(kept))
		spans, _ = acquireSpans(rec)
		require.Len(t, spans, 4)
		require.Equal(t, tracing.OutcomeError, attrs(spans[3].Attributes())[tracing.Outcome].AsString())
		require.Equal(t, codes.Error, spans[3].Status().Code)
	})
}

func attrs(kvs []attribute.KeyValue) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range kvs {
		m[kv.Key] = kv.Value
	}
	return m
}
