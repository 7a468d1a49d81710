package lock_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.uber.org/goleak"

	"github.com/relock-go/relock/internal/testkit/redistest"
	"github.com/relock-go/relock/lock"
	"github.com/relock-go/relock/tracing"
	"github.com/relock-go/relock/watchdog"
)

// A go-redis pool that could not dial a killed node retries in the
// background, a second apart, until it sees the pool closed: such a
// goroutine ends within a second of its client's Close.
func TestMain(m *testing.M) {
	if addr := os.Getenv(fairProcessEnv); addr != "" {
		os.Exit(fairProcess(addr)) // a waiter process of TestFairProcesses
	}
	goleak.VerifyTestMain(redistest.Main(m), goleak.IgnoreAnyFunction("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).tryDial"))
}

// each runs f on miniredis and on a real redis-server.
func each(t *testing.T, f func(t *testing.T, env *redistest.Env)) {
	for _, b := range redistest.AllBackends() {
		t.Run(b.Name, func(t *testing.T) { f(t, b.New(t)) })
	}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestReentrancyCounts(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		mu := lock.New(env.Universal, "order:1")
		c1, err := mu.Lock(ctx)
		require.NoError(t, err)
		// The DESIGN example: another handle of the same name re-enters.
		c2, err := lock.New(env.Universal, "order:1").Lock(c1)
		require.NoError(t, err)
		c3, err := mu.TryLock(c2)
		require.NoError(t, err)
		n, err := mu.HoldCount(c3)
		require.NoError(t, err)
		require.Equal(t, 3, n)
		require.EqualValues(t, 3, mustInt(t, env.Universal.HGet(ctx, "order:1", ownerField(t, env.Universal, "order:1"))))

		require.NoError(t, mu.Unlock(c3))
		require.ErrorIs(t, context.Cause(c3), context.Canceled)
		require.NoError(t, c2.Err(), "an inner unlock leaves the outer hold alone")
		n, _ = mu.HoldCount(c1)
		require.Equal(t, 2, n)
		require.NoError(t, mu.Unlock(c2))
		locked, err := mu.IsLocked(ctx)
		require.NoError(t, err)
		require.True(t, locked, "one count remains")
		require.NoError(t, mu.Unlock(c1))
		locked, _ = mu.IsLocked(ctx)
		require.False(t, locked)
		n, _ = mu.HoldCount(c1)
		require.Zero(t, n)
	})
}

func mustInt(t *testing.T, cmd *redis.StringCmd) int {
	n, err := cmd.Int()
	require.NoError(t, err)
	return n
}

func ownerField(t *testing.T, c redis.UniversalClient, name string) string {
	fields, err := c.HKeys(context.Background(), name).Result()
	require.NoError(t, err)
	require.Len(t, fields, 1)
	return fields[0]
}

func TestExclusionBetweenOwners(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		mu := lock.New(env.Universal, "x")
		held, err := mu.Lock(ctx)
		require.NoError(t, err)

		// A goroutine with its own context is another owner, even on the
		// same *Mutex.
		_, err = mu.TryLock(ctx)
		require.ErrorIs(t, err, lock.ErrNotAcquired)
		require.ErrorContains(t, err, `"x"`, "errors name the lock")
		require.ErrorContains(t, err, "trylock", "errors name the operation")
		_, err = lock.New(env.Universal, "x", lock.WithWaitTimeout(50*time.Millisecond)).Lock(ctx)
		require.ErrorIs(t, err, lock.ErrNotAcquired)

		ttl, err := mu.TTL(ctx)
		require.NoError(t, err)
		require.Greater(t, ttl, 20*time.Second)

		require.NoError(t, mu.Unlock(held))
		other, err := mu.TryLock(ctx)
		require.NoError(t, err)
		require.NoError(t, mu.Unlock(other))
		ttl, _ = mu.TTL(ctx)
		require.Zero(t, ttl)
	})
}

func TestNotHeld(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		mu := lock.New(env.Universal, "nh")
		require.ErrorIs(t, mu.Unlock(ctx), lock.ErrNotHeld, "never locked")

		held, err := mu.Lock(ctx)
		require.NoError(t, err)
		// A non-owner: a context that carries no hold of this lock.
		require.ErrorIs(t, mu.Unlock(context.Background()), lock.ErrNotHeld)
		other, err := lock.New(env.Universal, "other").Lock(ctx)
		require.NoError(t, err)
		require.ErrorIs(t, mu.Unlock(other), lock.ErrNotHeld, "an owner of another lock")
		require.NoError(t, lock.New(env.Universal, "other").Unlock(other))
		n, _ := mu.HoldCount(held)
		require.Equal(t, 1, n, "the lock is untouched")

		require.NoError(t, mu.Unlock(held))
		// Double unlock: ErrNotHeld, and a new holder is untouched.
		next, err := mu.Lock(ctx)
		require.NoError(t, err)
		err = mu.Unlock(held)
		require.ErrorIs(t, err, lock.ErrNotHeld)
		require.ErrorContains(t, err, "unlock")
		n, _ = mu.HoldCount(next)
		require.Equal(t, 1, n)
		require.NoError(t, mu.Unlock(next))
	})
}

func TestFixedLeaseExpires(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		const lease = 400 * time.Millisecond
		mu := lock.New(env.Universal, "lease", lock.WithLeaseTime(lease))
		held, err := mu.Lock(ctx)
		require.NoError(t, err)
		ttl, _ := mu.TTL(ctx)
		require.LessOrEqual(t, ttl, lease)
		require.Greater(t, ttl, lease/2)

		env.FastForward(lease / 2)
		_, err = mu.TryLock(ctx)
		require.ErrorIs(t, err, lock.ErrNotAcquired, "not before the lease ends")

		env.FastForward(lease)
		other, err := mu.TryLock(ctx)
		require.NoError(t, err, "the lease ended without renewal")
		// The first holder is told (the watchdog's clock is real: wait).
		select {
		case <-held.Done():
		case <-time.After(5 * time.Second):
			t.Fatal("holder of an ended lease not told")
		}
		require.ErrorIs(t, context.Cause(held), lock.ErrLockLost)
		require.ErrorIs(t, mu.Unlock(held), lock.ErrLockLost)
		// other's own fixed lease may have ended on the watchdog's real
		// clock by now (miniredis's clock stands still): read without its
		// cancellation.
		n, err := mu.HoldCount(context.WithoutCancel(other))
		require.NoError(t, err)
		require.Equal(t, 1, n, "the lost holder's unlock did not touch the new hold")
		if err := mu.Unlock(other); err != nil {
			require.ErrorIs(t, err, lock.ErrLockLost)
		}
	})
}

func TestWatchdogKeepsLockThroughFiveLeases(t *testing.T) {
	t.Run("redis", func(t *testing.T) {
		srv := redistest.StartServer(t)
		rdb := srv.Client(t)
		ctx := ctxT(t)
		const timeout = 300 * time.Millisecond
		mu := lock.New(rdb, "wd", lock.WithWatchdogTimeout(timeout))
		held, err := mu.Lock(ctx)
		require.NoError(t, err)
		end := time.Now().Add(5*timeout + timeout/2)
		for time.Now().Before(end) {
			require.NoError(t, held.Err())
			locked, err := mu.IsLocked(ctx)
			require.NoError(t, err)
			require.True(t, locked)
			time.Sleep(25 * time.Millisecond)
		}
		require.NoError(t, mu.Unlock(held))
	})
	t.Run("miniredis", func(t *testing.T) {
		mr, rdb := redistest.Miniredis(t)
		ctx := ctxT(t)
		clk := watchdog.NewFakeClock(time.Unix(1_700_000_000, 0))
		wd := watchdog.New(watchdog.WithClock(clk))
		mu := lock.New(rdb, "wd", lock.WithWatchdog(wd)) // default 30 s lease
		held, err := mu.Lock(ctx)
		require.NoError(t, err)
		for i := 1; i <= 15; i++ { // 15 renewals of 10 s = 5 leases of 30 s
			require.Eventually(t, func() bool { return clk.Pending() > 0 }, 5*time.Second, time.Millisecond)
			clk.Advance(10 * time.Second)
			require.Eventually(t, func() bool { return wd.Stats().Renewed == int64(i) }, 5*time.Second, time.Millisecond, "renewal %d: %+v pending %d", i, wd.Stats(), clk.Pending())
			mr.FastForward(10 * time.Second)
			require.True(t, mr.Exists("wd"), "after %d renewals", i)
			require.Greater(t, mr.TTL("wd"), 15*time.Second)
		}
		require.NoError(t, held.Err())
		require.NoError(t, mu.Unlock(held))
		require.False(t, mr.Exists("wd"))
	})
}

func TestDeletedKeyReportedLost(t *testing.T) {
	t.Run("miniredis", func(t *testing.T) {
		mr, rdb := redistest.Miniredis(t)
		ctx := ctxT(t)
		clk := watchdog.NewFakeClock(time.Unix(1_700_000_000, 0))
		wd := watchdog.New(watchdog.WithClock(clk))
		mu := lock.New(rdb, "del", lock.WithWatchdog(wd))
		held, err := mu.Lock(ctx)
		require.NoError(t, err)
		mr.Del("del")
		require.Eventually(t, func() bool { return clk.Pending() > 0 }, 5*time.Second, time.Millisecond)
		clk.Advance(10 * time.Second) // one renewal interval of the 30 s lease
		select {
		case <-held.Done():
		case <-time.After(5 * time.Second):
			t.Fatal("deleted lock not reported within one renewal interval")
		}
		require.ErrorIs(t, context.Cause(held), lock.ErrLockLost)
		require.ErrorIs(t, mu.Unlock(held), lock.ErrLockLost)
	})
	t.Run("redis", func(t *testing.T) {
		srv := redistest.StartServer(t)
		rdb := srv.Client(t)
		ctx := ctxT(t)
		const timeout = 900 * time.Millisecond // renewed every 300 ms
		mu := lock.New(rdb, "del", lock.WithWatchdogTimeout(timeout))
		held, err := mu.Lock(ctx)
		require.NoError(t, err)
		require.NoError(t, rdb.Del(ctx, "del").Err())
		start := time.Now()
		select {
		case <-held.Done():
		case <-time.After(5 * time.Second):
			t.Fatal("deleted lock not reported")
		}
		took := time.Since(start)
		t.Logf("deleted key reported after %v (renewal interval %v)", took, timeout/3)
		require.Less(t, took, timeout, "reported before the lease would have lapsed")
		require.ErrorIs(t, context.Cause(held), lock.ErrLockLost)
		require.ErrorIs(t, mu.Unlock(held), lock.ErrLockLost)
	})
}

func TestRedisKilledHolderTold(t *testing.T) {
	srv := redistest.StartServer(t)
	rdb := srv.Client(t, func(o *redis.Options) { o.MaxRetries = -1; o.DialTimeout = 100 * time.Millisecond })
	ctx := ctxT(t)
	const timeout = 600 * time.Millisecond
	mu := lock.New(rdb, "killed", lock.WithWatchdogTimeout(timeout), lock.WithUnlockTimeout(300*time.Millisecond))
	held, err := mu.Lock(ctx)
	require.NoError(t, err)
	srv.Kill()
	killed := time.Now()
	select {
	case <-held.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("holder not told that Redis went away")
	}
	require.LessOrEqual(t, time.Since(killed), timeout+100*time.Millisecond)
	require.ErrorIs(t, context.Cause(held), lock.ErrLockLost)
	require.ErrorIs(t, mu.Unlock(held), lock.ErrLockLost)

	// Restarted without persistence: the lock is free again.
	srv.Restart(t)
	again, err := mu.Lock(ctx)
	require.NoError(t, err)
	require.NoError(t, mu.Unlock(again))
}

func TestFencingTokensIncrease(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		mu := lock.New(env.Universal, "fence")
		_, ok := lock.FencingToken(ctx)
		require.False(t, ok)
		var last int64
		for range 5 {
			held, err := mu.Lock(ctx)
			require.NoError(t, err)
			tok, ok := lock.FencingToken(held)
			require.True(t, ok)
			require.Greater(t, tok, last)
			last = tok
			inner, err := mu.Lock(held) // re-entry draws a token too
			require.NoError(t, err)
			tok2, _ := lock.FencingToken(inner)
			require.Greater(t, tok2, tok)
			last = tok2
			require.NoError(t, mu.Unlock(inner))
			require.NoError(t, mu.Unlock(held))
		}
		v, err := env.Universal.Get(ctx, "redisson_lock_token:{fence}").Int64()
		require.NoError(t, err)
		require.Equal(t, last, v, "RFencedLock's counter key")
	})
}

func TestBadInputWritesNothing(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		cases := map[string]*lock.Mutex{
			"nil client":       lock.New(nil, "a"),
			"empty name":       lock.New(env.Universal, ""),
			"zero lease":       lock.New(env.Universal, "a", lock.WithLeaseTime(0)),
			"negative lease":   lock.New(env.Universal, "a", lock.WithLeaseTime(-time.Second)),
			"zero watchdog":    lock.New(env.Universal, "a", lock.WithWatchdogTimeout(0)),
			"negative wait":    lock.New(env.Universal, "a", lock.WithWaitTimeout(-1)),
			"zero unlock wait": lock.New(env.Universal, "a", lock.WithUnlockTimeout(0)),
		}
		for name, mu := range cases {
			_, err := mu.Lock(ctx)
			require.ErrorIs(t, err, lock.ErrInvalidArgument, name)
			require.ErrorContains(t, err, "lock", name)
			_, err = mu.TryLock(ctx)
			require.ErrorIs(t, err, lock.ErrInvalidArgument, name)
			require.ErrorIs(t, mu.Unlock(ctx), lock.ErrInvalidArgument, name)
			_, err = mu.ForceUnlock(ctx)
			require.ErrorIs(t, err, lock.ErrInvalidArgument, name)
			_, err = mu.HoldCount(ctx)
			require.ErrorIs(t, err, lock.ErrInvalidArgument, name)
			_, err = mu.IsLocked(ctx)
			require.ErrorIs(t, err, lock.ErrInvalidArgument, name)
			_, err = mu.TTL(ctx)
			require.ErrorIs(t, err, lock.ErrInvalidArgument, name)
		}
		_, err := lock.New(env.Universal, "a").Lock(nil) //lint:ignore SA1012 a nil ctx on purpose: it must be refused, not panic
		require.ErrorIs(t, err, lock.ErrInvalidArgument)
		_, err = lock.New(nil, "a").Lock(ctx)
		require.ErrorContains(t, err, "nil redis client")
		n, err := env.Universal.DBSize(ctx).Result()
		require.NoError(t, err)
		require.Zero(t, n, "nothing written to Redis")
	})
}

// With WithHoldScopedToContext, a hold ends with its acquiring context.
func TestAcquiringContextEndedFreesHold(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		parent, cancel := context.WithCancel(ctxT(t))
		mu := lock.New(env.Universal, "scoped", lock.WithHoldScopedToContext())
		held, err := mu.Lock(parent)
		require.NoError(t, err)
		cancel()
		require.Eventually(t, func() bool {
			locked, err := mu.IsLocked(context.Background())
			return err == nil && !locked
		}, 5*time.Second, 5*time.Millisecond, "released in the background")
		require.ErrorIs(t, held.Err(), context.Canceled)
		require.NoError(t, mu.Unlock(held), "Unlock of a hold its context ended is nil")
		require.ErrorIs(t, mu.Unlock(held), lock.ErrNotHeld, "but only once")
	})
}

// By default the acquiring context bounds the wait only: a deadline that
// passes, or a cancel right after Lock (redsync's and redislock's idiom),
// leaves the hold alone. Measured before: a 200 ms timeout on a free lock
// lost it 50 ms after the deadline, with cause context.Canceled.
func TestAcquiringContextBoundsWaitOnly(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		mu := lock.New(env.Universal, "waitonly", lock.WithWatchdogTimeout(300*time.Millisecond))
		wait, cancel := context.WithTimeout(ctxT(t), 200*time.Millisecond)
		held, err := mu.Lock(wait)
		require.NoError(t, err)
		_, hasDeadline := held.Deadline()
		require.False(t, hasDeadline, "the wait's deadline is not the hold's")
		<-wait.Done()
		cancel()
		time.Sleep(400 * time.Millisecond) // past the deadline and a whole lease: renewed
		require.NoError(t, held.Err(), "the hold outlives the context that bounded its wait")
		locked, err := mu.IsLocked(ctxT(t))
		require.NoError(t, err)
		require.True(t, locked)
		n, err := mu.HoldCount(held)
		require.NoError(t, err)
		require.Equal(t, 1, n)

		// The other common shape: cancel at once, work on held.
		other := lock.New(env.Universal, "waitonly:2")
		wctx, wcancel := context.WithTimeout(ctxT(t), time.Second)
		held2, err := other.Lock(wctx)
		wcancel()
		require.NoError(t, err)
		time.Sleep(100 * time.Millisecond)
		require.NoError(t, held2.Err())

		require.NoError(t, mu.Unlock(held))
		require.NoError(t, other.Unlock(held2))
		require.ErrorIs(t, context.Cause(held), context.Canceled)
		locked, err = mu.IsLocked(ctxT(t))
		require.NoError(t, err)
		require.False(t, locked)
	})
}

// Re-entry is per lock: goroutines fanned out from a hold of Y (the
// errgroup pattern) are separate owners of X and exclude each other there.
// Before, they all re-entered X as Y's owner, inside X at once.
func TestFanOutFromAnotherHoldExcludes(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		y := lock.New(env.Universal, "fan:y")
		x := lock.New(env.Universal, "fan:x")
		heldY, err := y.Lock(ctx)
		require.NoError(t, err)
		var inside, overlaps, entered atomic.Int32
		var wg sync.WaitGroup
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				held, err := x.Lock(heldY)
				if !assert.NoError(t, err) {
					return
				}
				if inside.Add(1) > 1 {
					overlaps.Add(1)
				}
				entered.Add(1)
				n, err := x.HoldCount(held)
				assert.NoError(t, err)
				assert.Equal(t, 1, n, "a fresh owner, not a re-entry")
				time.Sleep(20 * time.Millisecond)
				inside.Add(-1)
				assert.NoError(t, x.Unlock(held))
			}()
		}
		wg.Wait()
		require.EqualValues(t, 4, entered.Load())
		require.Zero(t, overlaps.Load(), "goroutines fanned out from a hold of y overlapped inside x")

		// The same lock through the hold re-enters; NewOwner opts out.
		inner, err := y.Lock(heldY)
		require.NoError(t, err)
		n, err := y.HoldCount(inner)
		require.NoError(t, err)
		require.Equal(t, 2, n)
		require.NoError(t, y.Unlock(inner))
		_, err = y.TryLock(lock.NewOwner(heldY))
		require.ErrorIs(t, err, lock.ErrNotAcquired, "a new owner does not share the hold")
		require.NoError(t, y.Unlock(heldY))
	})
}

func TestUnlockWorksOnDoneContext(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		mu := lock.New(env.Universal, "done")
		held, err := mu.Lock(ctx)
		require.NoError(t, err)
		// A context derived from the hold and already cancelled still
		// carries the hold's values.
		derived, cancel := context.WithCancel(held)
		cancel()
		require.NoError(t, mu.Unlock(derived))
		locked, _ := mu.IsLocked(ctx)
		require.False(t, locked)
		require.ErrorIs(t, mu.Unlock(held), lock.ErrNotHeld)
	})
}

func TestWaitTimeoutBoundsWaitNotHold(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		const wait = 150 * time.Millisecond
		mu := lock.New(env.Universal, "wt", lock.WithWaitTimeout(wait))
		held, err := mu.Lock(ctx)
		require.NoError(t, err)

		start := time.Now()
		_, err = mu.Lock(context.Background())
		require.ErrorIs(t, err, lock.ErrNotAcquired)
		require.GreaterOrEqual(t, time.Since(start), wait)
		require.NoError(t, mu.Unlock(held))

		held, err = mu.Lock(ctx)
		require.NoError(t, err)
		time.Sleep(3 * wait)
		require.NoError(t, held.Err(), "the hold outlives the wait bound")
		locked, _ := mu.IsLocked(ctx)
		require.True(t, locked)
		require.NoError(t, mu.Unlock(held))
	})
}

func TestContextDeadlineBoundsWait(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		mu := lock.New(env.Universal, "dl")
		held, err := mu.Lock(ctx)
		require.NoError(t, err)
		wctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		_, err = mu.Lock(wctx)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.NoError(t, mu.Unlock(held))
	})
}

// TestContentionNoOverlap runs 8 goroutines on each of 2 handles (two
// clients, so two connection pools and two queue hubs, like two
// processes) and records every critical section; any overlap fails.
func TestContentionNoOverlap(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		clients := []redis.UniversalClient{env.Universal, env.NewClient(t)}
		const perG = 25
		var (
			inside   atomic.Int32
			overlaps atomic.Int32
			mu       sync.Mutex
			history  []interval
			wg       sync.WaitGroup
		)
		for h, c := range clients {
			m := lock.New(c, "contended")
			for g := range 8 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range perG {
						held, err := m.Lock(ctx)
						if err != nil {
							t.Errorf("handle %d goroutine %d: %v", h, g, err)
							return
						}
						start := time.Now()
						if inside.Add(1) != 1 {
							overlaps.Add(1)
						}
						if i%5 == 0 { // sometimes re-enter inside the section
							inner, err := m.Lock(held)
							if err != nil {
								t.Errorf("re-enter: %v", err)
							} else if err := m.Unlock(inner); err != nil {
								t.Errorf("inner unlock: %v", err)
							}
						}
						time.Sleep(100 * time.Microsecond)
						inside.Add(-1)
						end := time.Now()
						if err := m.Unlock(held); err != nil {
							t.Errorf("unlock: %v", err)
						}
						mu.Lock()
						history = append(history, interval{start, end, fmt.Sprintf("%d/%d", h, g)})
						mu.Unlock()
					}
				}()
			}
		}
		wg.Wait()
		require.Zero(t, overlaps.Load(), "two holders inside at once")
		require.Len(t, history, 2*8*perG)
		require.Zero(t, countOverlaps(history))
	})
}

type interval struct {
	start, end time.Time
	who        string
}

func countOverlaps(h []interval) int {
	n := 0
	for i := range h {
		for j := i + 1; j < len(h); j++ {
			if h[i].start.Before(h[j].end) && h[j].start.Before(h[i].end) {
				n++
			}
		}
	}
	return n
}

// TestWaitersShareOnePubSubConnection: 100 goroutines wait on 100
// different locks of one client through a single pub/sub connection.
func TestWaitersShareOnePubSubConnection(t *testing.T) {
	srv := redistest.StartServer(t)
	rdb := srv.Client(t)
	admin := srv.Client(t)
	ctx := ctxT(t)
	const n = 100
	holder := redis.NewClient(&redis.Options{Addr: rdb.Options().Addr}) // another "process" holds them
	defer holder.Close()
	helds := make([]context.Context, n)
	for i := range n {
		var err error
		helds[i], err = lock.New(holder, fmt.Sprintf("many:%d", i)).Lock(ctx)
		require.NoError(t, err)
	}
	var wg sync.WaitGroup
	var acquired atomic.Int32
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m := lock.New(rdb, fmt.Sprintf("many:%d", i))
			held, err := m.Lock(ctx)
			if err != nil {
				t.Error(err)
				return
			}
			acquired.Add(1)
			_ = m.Unlock(held)
		}()
	}
	require.Eventually(t, func() bool {
		res, err := admin.PubSubNumSub(ctx, "redisson_lock__channel:{many:99}", "redisson_lock__channel:{many:0}").Result()
		return err == nil && res["redisson_lock__channel:{many:99}"] == 1 && res["redisson_lock__channel:{many:0}"] == 1
	}, 10*time.Second, 5*time.Millisecond)
	require.Eventually(t, func() bool {
		chans, err := admin.PubSubChannels(ctx, "redisson_lock__channel:*").Result()
		return err == nil && len(chans) == n
	}, 10*time.Second, 5*time.Millisecond)
	conns, err := redistest.CountPubSubConns(ctx, admin)
	require.NoError(t, err)
	require.Equal(t, 1, conns, "one pub/sub connection serves all waiters of the client")
	require.Zero(t, acquired.Load())

	for i := range n {
		require.NoError(t, lock.New(holder, fmt.Sprintf("many:%d", i)).Unlock(helds[i]))
	}
	wg.Wait()
	require.EqualValues(t, n, acquired.Load())
	require.Eventually(t, func() bool {
		conns, err := redistest.CountPubSubConns(ctx, admin)
		return err == nil && conns == 0
	}, 5*time.Second, 10*time.Millisecond, "the idle pub/sub connection closes")
}

func TestAcquireSpan(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		rec, tp := spanRecorder(t)
		mu := lock.New(env.Universal, "traced", lock.WithTracerProvider(tp))
		held, err := mu.Lock(ctx)
		require.NoError(t, err)
		inner, err := mu.Lock(held)
		require.NoError(t, err)
		_, err = mu.TryLock(context.Background())
		require.ErrorIs(t, err, lock.ErrNotAcquired)
		require.NoError(t, mu.Unlock(inner))
		require.NoError(t, mu.Unlock(held))

		var spans []sdktrace.ReadOnlySpan
		releases := 0
		for _, s := range rec.Ended() {
			require.Equal(t, tracing.ScopeName, s.InstrumentationScope().Name)
			if s.Name() == tracing.SpanReleaseLock {
				releases++ // one per Unlock (see TestReleaseSpan)
				continue
			}
			require.Equal(t, tracing.SpanAcquireLock, s.Name())
			spans = append(spans, s)
		}
		require.Len(t, spans, 3)
		require.Equal(t, 2, releases)
		a := attrs(spans[0].Attributes())
		require.Equal(t, "traced", a[tracing.LockName].AsString())
		require.Equal(t, "lock", a[tracing.Primitive].AsString())
		require.NotEmpty(t, a[tracing.Owner].AsString())
		require.Equal(t, tracing.OutcomeAcquired, a[tracing.Outcome].AsString())
		require.EqualValues(t, 1, a[tracing.Attempts].AsInt64())
		require.False(t, a[tracing.Reentrant].AsBool())
		require.EqualValues(t, 30000, a[tracing.LeaseMillis].AsInt64())
		require.Positive(t, a[tracing.FencingToken].AsInt64())
		_, hasWait := a[tracing.WaitMillis]
		require.True(t, hasWait)
		require.True(t, attrs(spans[1].Attributes())[tracing.Reentrant].AsBool())

		try := attrs(spans[2].Attributes())
		require.Equal(t, tracing.OutcomeNotAcquired, try[tracing.Outcome].AsString())
		require.Equal(t, codes.Unset, spans[2].Status().Code, "contention on a Try is not an error")
	})
}

func attrs(kvs []attribute.KeyValue) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range kvs {
		m[kv.Key] = kv.Value
	}
	return m
}

func TestForceUnlockWakesWaiterAndTellsHolder(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		mu := lock.New(env.Universal, "force", lock.WithWatchdogTimeout(300*time.Millisecond))
		held, err := mu.Lock(ctx)
		require.NoError(t, err)
		ok, err := mu.ForceUnlock(ctx)
		require.NoError(t, err)
		require.True(t, ok)
		ok, err = mu.ForceUnlock(ctx)
		require.NoError(t, err)
		require.False(t, ok)
		select {
		case <-held.Done():
		case <-time.After(5 * time.Second):
			t.Fatal("force-unlocked holder not told")
		}
		require.ErrorIs(t, context.Cause(held), lock.ErrLockLost)
		require.True(t, errors.Is(mu.Unlock(held), lock.ErrLockLost))
	})
}
