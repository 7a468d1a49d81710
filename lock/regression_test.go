package lock_test

// Regression tests: each guards a property that a defect once broke, and
// failed before its fix.

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/core"
	"github.com/relock-go/relock/internal/testkit/redistest"
	"github.com/relock-go/relock/lock"
	"github.com/relock-go/relock/rwlock"
	"github.com/relock-go/relock/watchdog"
)

// A SUBSCRIBE refused by Redis (NOPERM: Redis 7's default
// acl-pubsub-default is resetchannels) must fail the waiter, not hang it.
func TestRefusedSubscribeFailsWaiter(t *testing.T) {
	srv := redistest.StartServer(t)
	admin := srv.Client(t)
	ctx := context.Background()
	require.NoError(t, admin.Do(ctx, "ACL", "SETUSER", "app", "on", ">pw", "~*", "+@all").Err())
	app := srv.Client(t, func(o *redis.Options) { o.Username, o.Password = "app", "pw" })
	holder := lock.New(admin, "acl")
	held, err := holder.Lock(ctx)
	require.NoError(t, err)
	defer holder.Unlock(held)

	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	start := time.Now()
	_, err = lock.New(app, "acl").Lock(wctx)
	require.Error(t, err)
	require.NotErrorIs(t, err, context.DeadlineExceeded, "the waiter hung on a refused subscription")
	require.ErrorContains(t, err, "NOPERM")
	require.Less(t, time.Since(start), 4*time.Second)
}

// Goroutines of one owner (children of a held context): one unlocks B's
// last count while another re-enters B. The re-entered hold must keep a
// tracked, renewed lease.
func TestUnlockRacingReentryKeepsLease(t *testing.T) {
	_, rdb := redistest.Miniredis(t)
	ctx := context.Background()
	a := lock.New(rdb, "A")
	hA, err := a.Lock(ctx)
	require.NoError(t, err)
	defer a.Unlock(hA)
	wd := watchdog.New()
	b := lock.New(rdb, "B", lock.WithWatchdog(wd))
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		h1, err := b.Lock(hA)
		require.NoError(t, err)
		var h2 context.Context
		var err2 error
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { defer wg.Done(); _ = b.Unlock(h1) }()
		go func() { defer wg.Done(); h2, err2 = b.Lock(hA) }()
		wg.Wait()
		require.NoError(t, err2)
		n, err := b.HoldCount(h2)
		require.NoError(t, err)
		require.Equal(t, 1, n)

		require.NoError(t, b.Unlock(h2))
	}
}

// Two goroutines of one owner take a free lock at once; neither may be
// reported lost, and both Unlocks free it.
func TestConcurrentFreshAcquireSameOwner(t *testing.T) {
	srv := redistest.StartServer(t)
	rdb := srv.Client(t)
	ctx := context.Background()
	// Holds of other locks no longer lend their owner, so the one owner
	// is pinned, as only this module's tests can.
	hA := core.WithOwner(ctx, core.Mint())
	b := lock.New(rdb, "B", lock.WithWatchdog(watchdog.New()))
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		var hs [2]context.Context
		var wg sync.WaitGroup
		for j := range hs {
			wg.Add(1)
			go func() { defer wg.Done(); hs[j], _ = b.Lock(hA) }()
		}
		wg.Wait()
		for j := range hs {
			require.NoError(t, b.Unlock(hs[j]))
		}
		require.EqualValues(t, 0, rdb.Exists(ctx, "B").Val())
	}
}

// A re-entry through a handle with a shorter lease must not shorten the
// TTL under the lease the watchdog tracks.
func TestReentryKeepsTheHoldsLease(t *testing.T) {
	rdb := redistest.StartServer(t).Client(t)
	ctx := context.Background()
	outer := lock.New(rdb, "mixed", lock.WithWatchdogTimeout(3*time.Second))
	inner := lock.New(rdb, "mixed", lock.WithWatchdogTimeout(300*time.Millisecond))
	held, err := outer.Lock(ctx)
	require.NoError(t, err)
	in, err := inner.Lock(held)
	require.NoError(t, err)
	require.NoError(t, inner.Unlock(in))
	require.Greater(t, rdb.PTTL(ctx, "mixed").Val(), time.Second)
	time.Sleep(500 * time.Millisecond)
	_, err = outer.TryLock(ctx)
	require.ErrorIs(t, err, lock.ErrNotAcquired, "another owner got in under a live hold")
	require.NoError(t, outer.Unlock(held))
}

// After the acquiring context of a hold scoped to it ended, a deferred
// Unlock returns only once the background release is done.
func TestUnlockAfterAbandonWaitsForRelease(t *testing.T) {
	srv := redistest.StartServer(t)
	rdb := srv.Client(t)
	rdb.AddHook(latency{})
	mu := lock.New(rdb, "abandon", lock.WithHoldScopedToContext())
	for range 30 {
		reqCtx, cancel := context.WithCancel(context.Background())
		held, err := mu.Lock(reqCtx)
		require.NoError(t, err)
		cancel()
		time.Sleep(100 * time.Microsecond)
		require.NoError(t, mu.Unlock(held))
		require.EqualValues(t, 0, rdb.Exists(context.Background(), "abandon").Val(), "still held after Unlock returned")
	}
}

type latency struct{}

func (latency) DialHook(next redis.DialHook) redis.DialHook { return next }
func (latency) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		time.Sleep(2 * time.Millisecond)
		return next(ctx, cmd)
	}
}
func (latency) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// A *redis.Ring would send a lock's scripts to one shard: refused.
func TestRingRefused(t *testing.T) {
	m1, m2 := miniredis.RunT(t), miniredis.RunT(t)
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"s1": m1.Addr(), "s2": m2.Addr()}})
	defer ring.Close()
	_, err := lock.New(ring, "r").Lock(context.Background())
	require.ErrorIs(t, err, lock.ErrInvalidArgument)
	require.ErrorContains(t, err, "Ring")
}

// No panic on nil or zero inputs: ErrInvalidArgument.
func TestNilInputsRefused(t *testing.T) {
	_, rdb := redistest.Miniredis(t)
	mu := lock.New(rdb, "n")
	var nilCtx context.Context
	var zero lock.Mutex
	for name, f := range map[string]func() error{
		"HoldCount(nil)":    func() error { _, err := mu.HoldCount(nilCtx); return err },
		"IsLocked(nil)":     func() error { _, err := mu.IsLocked(nilCtx); return err },
		"TTL(nil)":          func() error { _, err := mu.TTL(nilCtx); return err },
		"ForceUnlock(nil)":  func() error { _, err := mu.ForceUnlock(nilCtx); return err },
		"Unlock(nil)":       func() error { return mu.Unlock(nilCtx) },
		"typed-nil client":  func() error { _, err := lock.New((*redis.Client)(nil), "n").TryLock(context.Background()); return err },
		"zero Mutex":        func() error { _, err := zero.TryLock(context.Background()); return err },
		"zero Mutex Unlock": func() error { return zero.Unlock(context.Background()) },
		"tiny lease": func() error {
			_, err := lock.New(rdb, "n", lock.WithLeaseTime(5*time.Millisecond)).TryLock(context.Background())
			return err
		},
	} {
		err := f()
		require.True(t, errors.Is(err, lock.ErrInvalidArgument), "%s: %v", name, err)
	}
}

// Unlocking an outer hold before an inner one of the same owner gives
// back the outer's count only: the inner hold stays live and keeps the
// lock from other owners until its own Unlock (for a lock, and for both
// sides of an rwlock).
func TestOutOfOrderUnlockKeepsTheInnerHold(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		mu := lock.New(env.Universal, "ooo")
		outer, err := mu.Lock(ctx)
		require.NoError(t, err)
		inner, err := mu.Lock(outer)
		require.NoError(t, err)
		require.NoError(t, mu.Unlock(outer))
		require.NoError(t, inner.Err(), "the inner hold lives on")
		n, err := mu.HoldCount(inner)
		require.NoError(t, err)
		require.Equal(t, 1, n)
		_, err = mu.TryLock(ctx)
		require.ErrorIs(t, err, lock.ErrNotAcquired, "still held")
		require.NoError(t, mu.Unlock(inner))
		free, err := mu.TryLock(ctx)
		require.NoError(t, err)
		require.NoError(t, mu.Unlock(free))

		rw := rwlock.New(env.Universal, "ooo:rw")
		w, err := rw.Lock(ctx)
		require.NoError(t, err)
		r, err := rw.RLock(w) // write-then-read
		require.NoError(t, err)
		require.NoError(t, rw.Unlock(w))
		require.NoError(t, r.Err(), "the read hold lives on")
		_, err = rw.TryLock(ctx)
		require.ErrorIs(t, err, rwlock.ErrNotAcquired, "a writer waits for the reader")
		require.NoError(t, rw.RUnlock(r))
		free, err = rw.TryLock(ctx)
		require.NoError(t, err)
		require.NoError(t, rw.Unlock(free))
	})
}
