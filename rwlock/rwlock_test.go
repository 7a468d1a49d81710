package rwlock_test

import (
	"context"
	"errors"
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

	"github.com/relock-go/relock/internal/core"
	"github.com/relock-go/relock/internal/testkit/redistest"
	"github.com/relock-go/relock/rwlock"
	"github.com/relock-go/relock/tracing"
	"github.com/relock-go/relock/watchdog"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(redistest.Main(m)) }

// Bounds. Every wait in this suite is bounded generously (a noisy 2-core
// machine under -race), yet "promptly" stays well below the fallback
// timers a missed wake-up would fall back to (a 30 s lease, or a writer's
// lease/3 of a 90 s lease).
const (
	prompt = 5 * time.Second  // a woken waiter gets in within this
	settle = 10 * time.Second // a background state change is visible within this
	poll   = 5 * time.Millisecond
	// longWatchdog: a writer's fallback retry (lease/3 = 30 s) can never be
	// mistaken for a wake-up.
	longWatchdog = 90 * time.Second
)

// each runs f on miniredis and on a real redis-server.
func each(t *testing.T, f func(t *testing.T, env *redistest.Env)) {
	for _, b := range redistest.AllBackends() {
		t.Run(b.Name, func(t *testing.T) { f(t, b.New(t)) })
	}
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// as gives ctx a fixed owner id, so that the hash fields are predictable:
// field <id> is its read count, <id>:write its write count.
func as(ctx context.Context, id string) context.Context { return core.WithOwner(ctx, id) }

// otherClient is a second client of env's server: another connection
// pool and another queue hub, as another process would have.
func otherClient(t testing.TB, env *redistest.Env) redis.UniversalClient {
	return env.NewClient(t)
}

// Redis names of lock name's keys (Redisson's RReadWriteLock layout).
func waitersKey(name string) string { return "{" + name + "}:rwlock_write_waiters" }
func channelOf(name string) string  { return "redisson_rwlock:{" + name + "}" }
func tokenKey(name string) string   { return "redisson_lock_token:{" + name + "}" }
func leaseKey(name, id string, i int) string {
	return fmt.Sprintf("{%s}:%s:rwlock_timeout:%d", name, id, i)
}

// count returns the count in field f of the lock hash, 0 when absent.
func count(t testing.TB, c redis.UniversalClient, name, f string) int {
	t.Helper()
	n, err := c.HGet(context.Background(), name, f).Int()
	if errors.Is(err, redis.Nil) {
		return 0
	}
	require.NoError(t, err)
	return n
}

func mode(t testing.TB, c redis.UniversalClient, name string) string {
	t.Helper()
	m, err := c.HGet(context.Background(), name, "mode").Result()
	if errors.Is(err, redis.Nil) {
		return ""
	}
	require.NoError(t, err)
	return m
}

func exists(t testing.TB, c redis.UniversalClient, key string) bool {
	t.Helper()
	n, err := c.Exists(context.Background(), key).Result()
	require.NoError(t, err)
	return n == 1
}

func markedWriters(t testing.TB, c redis.UniversalClient, name string) int64 {
	t.Helper()
	n, err := c.ZCard(context.Background(), waitersKey(name)).Result()
	require.NoError(t, err)
	return n
}

func subscribers(t testing.TB, c redis.UniversalClient, channel string) int64 {
	t.Helper()
	n, err := redistest.Subscribers(context.Background(), c, channel)
	require.NoError(t, err)
	return n
}

// awaitWriterMarked returns once n writers wait (marked in the zset).
func awaitWriterMarked(t testing.TB, c redis.UniversalClient, name string, n int64) {
	t.Helper()
	require.Eventually(t, func() bool { return markedWriters(t, c, name) == n }, settle, poll,
		"want %d waiting writer(s) marked", n)
}

// awaitSubscribers returns once n connections subscribe to the channel of
// lock name: n waiting goroutines on n different clients.
func awaitSubscribers(t testing.TB, c redis.UniversalClient, name string, n int64) {
	t.Helper()
	require.Eventually(t, func() bool { return subscribers(t, c, channelOf(name)) == n }, settle, poll,
		"want %d subscribed waiter connection(s)", n)
}

// onlyBookkeepingLeft checks that, all holds released, the only keys left
// are the fencing counters and unlock latches of the locks names: no hash,
// no lease keys, no waiting-writer marks.
func onlyBookkeepingLeft(t testing.TB, c redis.UniversalClient, names ...string) {
	t.Helper()
	ks, err := redistest.Keys(context.Background(), c, "*")
	require.NoError(t, err)
	ok := func(k string) bool {
		for _, name := range names {
			tag := "{" + name + "}"
			if strings.Contains(name, "{") {
				tag = name
			}
			if k == "redisson_lock_token:"+tag || strings.HasPrefix(k, "redisson_unlock_latch:"+tag+":") || strings.HasPrefix(k, "relock_acquire_latch:"+tag+":") {
				return true
			}
		}
		return false
	}
	for _, k := range ks {
		if !ok(k) {
			t.Errorf("key %q left after every hold was released (all keys: %q)", k, ks)
		}
	}
}

// acq is the result of an acquire run in the background.
type acq struct {
	ctx context.Context
	err error
	at  time.Time
}

func goAcquire(f func() (context.Context, error)) <-chan acq {
	ch := make(chan acq, 1)
	go func() {
		c, err := f()
		ch <- acq{c, err, time.Now()}
	}()
	return ch
}

func await(t testing.TB, ch <-chan acq, within time.Duration, what string) acq {
	t.Helper()
	select {
	case a := <-ch:
		return a
	case <-time.After(within):
		t.Fatalf("%s: not done within %v", what, within)
		return acq{}
	}
}

func requireWaiting(t testing.TB, ch <-chan acq, what string) {
	t.Helper()
	select {
	case a := <-ch:
		t.Fatalf("%s: returned (err %v), want it still waiting", what, a.err)
	default:
	}
}

func requireDone(t testing.TB, ctx context.Context, what string) {
	t.Helper()
	select {
	case <-ctx.Done():
	case <-time.After(settle):
		t.Fatalf("%s: context not done within %v", what, settle)
	}
}

func TestReadersShare(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		rw := rwlock.New(env.Universal, "doc")
		r1, err := rw.RLock(as(ctx, "r1"))
		require.NoError(t, err)
		r2, err := rw.RLock(as(ctx, "r2"))
		require.NoError(t, err, "a second owner shares the read lock")
		// A third one, on another handle of another client (process).
		rw3 := rwlock.New(otherClient(t, env), "doc")
		r3, err := rw3.TryRLock(as(ctx, "r3"))
		require.NoError(t, err)

		require.Equal(t, "read", mode(t, env.Universal, "doc"))
		for _, id := range []string{"r1", "r2", "r3"} {
			require.Equal(t, 1, count(t, env.Universal, "doc", id), id)
			require.True(t, exists(t, env.Universal, leaseKey("doc", id, 1)), "one lease key per read acquisition")
		}
		ttl := env.Universal.PTTL(ctx, "doc").Val()
		require.Greater(t, ttl, 20*time.Second)
		require.LessOrEqual(t, ttl, 30*time.Second)
		require.NoError(t, r1.Err())
		require.NoError(t, r2.Err())

		require.NoError(t, rw.RUnlock(r1))
		require.ErrorIs(t, context.Cause(r1), context.Canceled, "the released hold's context ends")
		require.NoError(t, r2.Err(), "the other readers stay")
		require.Equal(t, 0, count(t, env.Universal, "doc", "r1"))
		require.False(t, exists(t, env.Universal, leaseKey("doc", "r1", 1)))
		require.NoError(t, rw.RUnlock(r2))
		require.True(t, exists(t, env.Universal, "doc"), "r3 still reads")
		require.NoError(t, rw3.RUnlock(r3))
		require.False(t, exists(t, env.Universal, "doc"))
		onlyBookkeepingLeft(t, env.Universal, "doc")
	})
}

func TestWriterExcludesReadersAndWriters(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		rw := rwlock.New(env.Universal, "x")
		w, err := rw.Lock(as(ctx, "w"))
		require.NoError(t, err)
		require.Equal(t, "write", mode(t, env.Universal, "x"))
		require.Equal(t, 1, count(t, env.Universal, "x", "w:write"))

		_, err = rw.TryRLock(ctx)
		require.ErrorIs(t, err, rwlock.ErrNotAcquired)
		require.ErrorContains(t, err, "tryrlock", "errors name the operation")
		require.ErrorContains(t, err, `"x"`, "errors name the lock")
		_, err = rw.TryLock(ctx)
		require.ErrorIs(t, err, rwlock.ErrNotAcquired)
		require.ErrorContains(t, err, "trylock")
		require.ErrorContains(t, err, `"x"`)

		// Waiting ones, bounded by WithWaitTimeout, on this and another client.
		const wait = 150 * time.Millisecond
		for _, c := range []redis.UniversalClient{env.Universal, otherClient(t, env)} {
			bounded := rwlock.New(c, "x", rwlock.WithWaitTimeout(wait))
			start := time.Now()
			_, err = bounded.RLock(ctx)
			require.ErrorIs(t, err, rwlock.ErrNotAcquired)
			require.ErrorContains(t, err, "rlock")
			require.GreaterOrEqual(t, time.Since(start), wait)
			_, err = bounded.Lock(ctx)
			require.ErrorIs(t, err, rwlock.ErrNotAcquired)
			require.ErrorContains(t, err, "lock")
		}
		// A context deadline bounds the wait too.
		dl, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		_, err = rw.RLock(dl)
		cancel()
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.Zero(t, markedWriters(t, env.Universal, "x"), "writers that gave up left no mark")

		require.NoError(t, w.Err())
		require.Equal(t, 1, count(t, env.Universal, "x", "w:write"), "the writer is untouched")
		require.NoError(t, rw.Unlock(w))
		require.False(t, exists(t, env.Universal, "x"))

		// And readers exclude writers.
		r, err := rw.RLock(ctx)
		require.NoError(t, err)
		_, err = rw.TryLock(ctx)
		require.ErrorIs(t, err, rwlock.ErrNotAcquired)
		require.NoError(t, rw.RUnlock(r))
		w2, err := rw.TryLock(ctx)
		require.NoError(t, err)
		require.NoError(t, rw.Unlock(w2))
		onlyBookkeepingLeft(t, env.Universal, "x")
	})
}

func TestReentrantBothSides(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		rw := rwlock.New(env.Universal, "re")
		r1, err := rw.RLock(as(ctx, "r"))
		require.NoError(t, err)
		// Another handle of the same name re-enters, as in package lock.
		r2, err := rwlock.New(env.Universal, "re").RLock(r1)
		require.NoError(t, err)
		r3, err := rw.TryRLock(r2)
		require.NoError(t, err)
		require.Equal(t, 3, count(t, env.Universal, "re", "r"), "one field, three counts")
		for i := 1; i <= 3; i++ {
			require.True(t, exists(t, env.Universal, leaseKey("re", "r", i)))
		}
		require.NoError(t, rw.RUnlock(r3))
		require.NoError(t, r2.Err(), "an inner RUnlock leaves the outer holds alone")
		require.Equal(t, 2, count(t, env.Universal, "re", "r"))
		require.NoError(t, rw.RUnlock(r2))
		require.NoError(t, rw.RUnlock(r1))
		require.False(t, exists(t, env.Universal, "re"))
		require.ErrorIs(t, rw.RUnlock(r1), rwlock.ErrNotHeld, "only once")

		w1, err := rw.Lock(as(ctx, "w"))
		require.NoError(t, err)
		w2, err := rw.Lock(w1)
		require.NoError(t, err)
		w3, err := rw.TryLock(w2)
		require.NoError(t, err)
		require.Equal(t, 3, count(t, env.Universal, "re", "w:write"))
		require.Equal(t, 0, count(t, env.Universal, "re", "w"), "no read count")
		require.NoError(t, rw.Unlock(w3))
		require.NoError(t, w2.Err())
		require.Equal(t, 2, count(t, env.Universal, "re", "w:write"))
		require.NoError(t, rw.Unlock(w2))
		_, err = rw.TryRLock(ctx)
		require.ErrorIs(t, err, rwlock.ErrNotAcquired, "one write count remains")
		require.NoError(t, rw.Unlock(w1))
		require.False(t, exists(t, env.Universal, "re"))
		require.ErrorIs(t, rw.Unlock(w1), rwlock.ErrNotHeld)
		onlyBookkeepingLeft(t, env.Universal, "re")
	})
}

// TestReentrantReadOnFixedLeaseKeepsLatestExpiry: an owner's read holds
// share one lease whose end, for the holder, is the latest acquisition
// plus the lease (a re-entry renews it). Releasing the inner hold must not
// leave Redis with only the outer acquisition's older lease key, which
// would end the read lock in Redis while the holder's context still says
// it holds it: a writer would get in beside a live reader.
func TestReentrantReadOnFixedLeaseKeepsLatestExpiry(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		const lease = 2 * time.Second
		rw := rwlock.New(env.Universal, "rfl", rwlock.WithLeaseTime(lease))
		outer, err := rw.RLock(as(ctx, "r"))
		require.NoError(t, err)
		env.FastForward(lease / 2)
		reentered := time.Now()
		inner, err := rw.RLock(outer)
		require.NoError(t, err)
		require.NoError(t, rw.RUnlock(inner))
		env.FastForward(lease/2 + 300*time.Millisecond) // past the outer acquisition's lease
		w, err := rw.TryLock(as(ctx, "w"))
		stillHeld := outer.Err() == nil
		elapsed := time.Since(reentered)
		if err == nil {
			require.NoError(t, rw.Unlock(w))
		}
		if uerr := rw.RUnlock(outer); uerr != nil {
			// The lease may have ended on the watchdog's clock by now
			// (real, while miniredis's stands still).
			require.ErrorIs(t, uerr, rwlock.ErrLockLost)
		}
		if env.Mini == nil && elapsed > lease*3/4 {
			t.Skipf("inconclusive: %v passed since the re-entry (slow machine)", elapsed)
		}
		require.False(t, err == nil && stillHeld,
			"a writer got in while the reader's context still held the read lock (%v after the re-entry)", elapsed)
		require.ErrorIs(t, err, rwlock.ErrNotAcquired)
	})
}

func TestNotHeld(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		rw := rwlock.New(env.Universal, "nh")
		require.ErrorIs(t, rw.RUnlock(ctx), rwlock.ErrNotHeld, "never locked")
		require.ErrorIs(t, rw.Unlock(ctx), rwlock.ErrNotHeld)
		_, err := rw.Downgrade(ctx)
		require.ErrorIs(t, err, rwlock.ErrNotHeld)

		r, err := rw.RLock(ctx)
		require.NoError(t, err)
		err = rw.Unlock(r)
		require.ErrorIs(t, err, rwlock.ErrNotHeld, "a read hold is not a write hold")
		require.ErrorContains(t, err, "unlock")
		_, err = rw.Downgrade(r)
		require.ErrorIs(t, err, rwlock.ErrNotHeld, "only a write hold downgrades")
		require.ErrorIs(t, rwlock.New(env.Universal, "other").RUnlock(r), rwlock.ErrNotHeld, "a hold of another lock")
		require.NoError(t, rw.RUnlock(r))

		w, err := rw.Lock(ctx)
		require.NoError(t, err)
		require.ErrorIs(t, rw.RUnlock(w), rwlock.ErrNotHeld, "a write hold is not a read hold")
		require.NoError(t, rw.Unlock(w))
		require.ErrorIs(t, rw.Unlock(w), rwlock.ErrNotHeld)
		onlyBookkeepingLeft(t, env.Universal, "nh")
	})
}

func TestWriterMayTakeReadLock(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		rw := rwlock.New(env.Universal, "wr")
		w, err := rw.Lock(as(ctx, "w"))
		require.NoError(t, err)
		inner, err := rw.RLock(w)
		require.NoError(t, err, "the writer may read")
		require.Equal(t, 1, count(t, env.Universal, "wr", "w"))
		// The same owner, on a context that is not the write hold's: the
		// read hold will not end with the write hold.
		r, err := rw.TryRLock(as(ctx, "w"))
		require.NoError(t, err)
		require.Equal(t, "write", mode(t, env.Universal, "wr"))
		require.Equal(t, 1, count(t, env.Universal, "wr", "w:write"))
		require.Equal(t, 2, count(t, env.Universal, "wr", "w"))
		_, err = rw.TryRLock(ctx)
		require.ErrorIs(t, err, rwlock.ErrNotAcquired, "others may not")
		require.NoError(t, rw.RUnlock(inner))
		require.Equal(t, 1, count(t, env.Universal, "wr", "w"))

		// Unlocking the write side first leaves a read hold: readers come
		// in, writers do not, and the owner may not take the write lock
		// back (that would be an upgrade).
		require.NoError(t, rw.Unlock(w))
		require.NoError(t, r.Err(), "the read hold outlives the write hold")
		require.Equal(t, "read", mode(t, env.Universal, "wr"))
		other, err := rw.TryRLock(as(ctx, "o"))
		require.NoError(t, err)
		_, err = rw.TryLock(as(ctx, "x"))
		require.ErrorIs(t, err, rwlock.ErrNotAcquired)
		start := time.Now()
		_, err = rw.Lock(r)
		require.ErrorIs(t, err, rwlock.ErrUpgradeNotSupported)
		require.Less(t, time.Since(start), prompt)
		require.NoError(t, rw.RUnlock(other))
		require.NoError(t, rw.RUnlock(r))
		require.False(t, exists(t, env.Universal, "wr"))
		onlyBookkeepingLeft(t, env.Universal, "wr")
	})
}

// TestReadOnWriteHoldEndsWithIt: with WithHoldScopedToContext, a read
// hold taken on the write hold's context is scoped by it (as every hold is
// by the context it was acquired with), so unlocking the write side
// releases it too, in the background. (By default the read hold outlives
// the write hold: TestWriterMayTakeReadLock.)
func TestReadOnWriteHoldEndsWithIt(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		rw := rwlock.New(env.Universal, "scope", rwlock.WithHoldScopedToContext())
		w, err := rw.Lock(ctx)
		require.NoError(t, err)
		r, err := rw.RLock(w)
		require.NoError(t, err)
		require.NoError(t, rw.Unlock(w))
		requireDone(t, r, "the read hold taken on the write hold")
		require.Eventually(t, func() bool { return !exists(t, env.Universal, "scope") }, settle, poll)
		require.NoError(t, rw.RUnlock(r), "released because its context ended: nil")
		onlyBookkeepingLeft(t, env.Universal, "scope")
	})
}

func TestDowngrade(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		rw := rwlock.New(env.Universal, "dg")
		w, err := rw.Lock(as(ctx, "w"))
		require.NoError(t, err)
		wtok, _ := rwlock.FencingToken(w)
		d, err := rw.Downgrade(w)
		require.NoError(t, err)
		requireDone(t, w, "the write hold")
		require.ErrorIs(t, context.Cause(w), context.Canceled, "the write hold ended normally")
		require.NoError(t, d.Err())
		dtok, ok := rwlock.FencingToken(d)
		require.True(t, ok)
		require.Greater(t, dtok, wtok, "the read hold draws a token of its own")
		require.Equal(t, "read", mode(t, env.Universal, "dg"))
		require.Equal(t, 1, count(t, env.Universal, "dg", "w"))
		require.Equal(t, 0, count(t, env.Universal, "dg", "w:write"))
		require.True(t, exists(t, env.Universal, leaseKey("dg", "w", 1)))

		// Right after: another reader gets in, another writer does not.
		r, err := rw.TryRLock(as(ctx, "r"))
		require.NoError(t, err)
		_, err = rw.TryLock(as(ctx, "x"))
		require.ErrorIs(t, err, rwlock.ErrNotAcquired)
		require.ErrorIs(t, rw.Unlock(w), rwlock.ErrNotHeld, "the write hold is gone")
		_, err = rw.Downgrade(w)
		require.ErrorIs(t, err, rwlock.ErrNotHeld)
		_, err = rw.Lock(d)
		require.ErrorIs(t, err, rwlock.ErrUpgradeNotSupported, "the downgraded owner reads only")
		require.NoError(t, rw.RUnlock(r))
		require.NoError(t, rw.RUnlock(d))
		require.False(t, exists(t, env.Universal, "dg"))

		// A writer waiting during the downgrade stays out until the read
		// hold ends, then gets in.
		w, err = rw.Lock(as(ctx, "w"))
		require.NoError(t, err)
		other := rwlock.New(otherClient(t, env), "dg", rwlock.WithWatchdogTimeout(longWatchdog))
		wait := goAcquire(func() (context.Context, error) { return other.Lock(as(ctx, "w2")) })
		awaitWriterMarked(t, env.Universal, "dg", 1)
		d, err = rw.Downgrade(w)
		require.NoError(t, err)
		_, err = rw.TryLock(as(ctx, "x"))
		require.ErrorIs(t, err, rwlock.ErrNotAcquired)
		requireWaiting(t, wait, "writer waiting behind the downgraded hold")
		require.NoError(t, rw.RUnlock(d))
		got := await(t, wait, prompt, "writer after the downgraded hold ended")
		require.NoError(t, got.err)
		require.NoError(t, other.Unlock(got.ctx))
		onlyBookkeepingLeft(t, env.Universal, "dg")
	})
}

func TestDowngradeOfReentrantWriteKeepsWriteMode(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		rw := rwlock.New(env.Universal, "dg2")
		w1, err := rw.Lock(as(ctx, "w"))
		require.NoError(t, err)
		w2, err := rw.Lock(w1)
		require.NoError(t, err)
		d, err := rw.Downgrade(w2)
		require.NoError(t, err)
		requireDone(t, w2, "the downgraded write hold")
		require.NoError(t, w1.Err(), "the outer write hold stays")
		require.Equal(t, "write", mode(t, env.Universal, "dg2"))
		require.Equal(t, 1, count(t, env.Universal, "dg2", "w:write"))
		require.Equal(t, 1, count(t, env.Universal, "dg2", "w"))
		_, err = rw.TryRLock(as(ctx, "r"))
		require.ErrorIs(t, err, rwlock.ErrNotAcquired, "still write-locked")
		require.NoError(t, rw.RUnlock(d))
		require.Equal(t, "write", mode(t, env.Universal, "dg2"))
		_, err = rw.TryRLock(as(ctx, "r"))
		require.ErrorIs(t, err, rwlock.ErrNotAcquired, "still write-locked")
		require.NoError(t, rw.Unlock(w1))
		require.False(t, exists(t, env.Universal, "dg2"))
		onlyBookkeepingLeft(t, env.Universal, "dg2")
	})
}

// A downgrade whose reply was lost is sent again (go-redis resends after a
// read timeout): the latch answers the second run, so one write count is
// converted, not two, and the only one is not reported lost.
func TestDowngradeRunTwice(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		c := env.NewClient(t)
		twice := redistest.NewScriptFaults(rwlock.DowngradeSource())
		twice.Twice = true
		c.AddHook(twice)
		rw := rwlock.New(c, "dg-twice")
		w1, err := rw.Lock(as(ctx, "w"))
		require.NoError(t, err)
		w2, err := rw.Lock(w1)
		require.NoError(t, err)
		d, err := rw.Downgrade(w2)
		require.NoError(t, err)
		require.Equal(t, "write", mode(t, env.Universal, "dg-twice"), "the outer write hold still holds")
		require.Equal(t, 1, count(t, env.Universal, "dg-twice", "w:write"))
		require.Equal(t, 1, count(t, env.Universal, "dg-twice", "w"))
		require.NoError(t, rw.RUnlock(d))

		d, err = rw.Downgrade(w1) // the last write count
		require.NoError(t, err, "the second run must answer as the first")
		require.Equal(t, "read", mode(t, env.Universal, "dg-twice"))
		require.Equal(t, 1, count(t, env.Universal, "dg-twice", "w"))
		require.NoError(t, rw.RUnlock(d))
		require.False(t, exists(t, env.Universal, "dg-twice"))
		onlyBookkeepingLeft(t, env.Universal, "dg-twice")
	})
}

// TestDowngradeWakesWaitingReaders: readers waiting behind the writer, on
// this process and on three others, get in when the writer downgrades,
// while the downgraded hold is still held.
func TestDowngradeWakesWaitingReaders(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		rw := rwlock.New(env.Universal, "dgw")
		w, err := rw.Lock(as(ctx, "w"))
		require.NoError(t, err)
		var waits []<-chan acq
		var handles []*rwlock.RWMutex
		for i := range 3 {
			h := rwlock.New(otherClient(t, env), "dgw")
			handles = append(handles, h)
			waits = append(waits, goAcquire(func() (context.Context, error) { return h.RLock(as(ctx, fmt.Sprint("r", i))) }))
		}
		awaitSubscribers(t, env.Universal, "dgw", 3)
		handles = append(handles, rw)
		waits = append(waits, goAcquire(func() (context.Context, error) { return rw.RLock(as(ctx, "local")) }))
		require.Eventually(t, func() bool { return subscribers(t, env.Universal, channelOf("dgw")) == 4 }, settle, poll)
		for i, ch := range waits {
			requireWaiting(t, ch, fmt.Sprint("reader ", i))
		}

		start := time.Now()
		d, err := rw.Downgrade(w)
		require.NoError(t, err)
		defer func() { require.NoError(t, rw.RUnlock(d)) }()
		for i, ch := range waits {
			got := await(t, ch, prompt, fmt.Sprint("reader ", i, " after the downgrade"))
			require.NoError(t, got.err)
			t.Logf("reader %d in %v after the downgrade", i, got.at.Sub(start))
			defer func() { require.NoError(t, handles[i].RUnlock(got.ctx)) }()
		}
		require.NoError(t, d.Err(), "the downgraded hold shares with them")
		require.Equal(t, 1, count(t, env.Universal, "dgw", "w"))
	})
}

func TestUpgradeRefusedAtOnce(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		rw := rwlock.New(env.Universal, "up")
		r, err := rw.RLock(as(ctx, "u"))
		require.NoError(t, err)
		other, err := rw.RLock(as(ctx, "o")) // a plain writer would have to wait
		require.NoError(t, err)

		start := time.Now()
		_, err = rw.Lock(r)
		require.ErrorIs(t, err, rwlock.ErrUpgradeNotSupported)
		require.ErrorContains(t, err, `lock rwlock "up"`)
		_, err = rw.TryLock(r)
		require.ErrorIs(t, err, rwlock.ErrUpgradeNotSupported)
		_, err = rw.WriteLocker().Lock(r)
		require.ErrorIs(t, err, rwlock.ErrUpgradeNotSupported)
		// A handle whose watchdog does not track the read hold asks Redis:
		// the acquire script refuses it too, at once.
		wd := watchdog.New()
		_, err = rwlock.New(env.Universal, "up", rwlock.WithWatchdog(wd)).Lock(r)
		require.ErrorIs(t, err, rwlock.ErrUpgradeNotSupported)
		require.Less(t, time.Since(start), prompt, "refused at once, not after a wait")

		require.NoError(t, r.Err())
		require.Equal(t, 1, count(t, env.Universal, "up", "u"), "the read hold is untouched")
		require.Equal(t, 0, count(t, env.Universal, "up", "u:write"))
		require.Zero(t, markedWriters(t, env.Universal, "up"), "a refused upgrade leaves no mark")
		n, err := rw.TryRLock(as(ctx, "n"))
		require.NoError(t, err, "new readers are not held back")
		require.NoError(t, rw.RUnlock(n))
		require.NoError(t, rw.RUnlock(other))
		require.NoError(t, rw.RUnlock(r))
		onlyBookkeepingLeft(t, env.Universal, "up")
	})
}

func TestWaitingWriterBlocksNewReadersNotReentries(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		rw := rwlock.New(env.Universal, "ww")
		r1, err := rw.RLock(as(ctx, "r1"))
		require.NoError(t, err)
		writer := rwlock.New(otherClient(t, env), "ww", rwlock.WithWatchdogTimeout(longWatchdog))
		wait := goAcquire(func() (context.Context, error) { return writer.Lock(as(ctx, "w")) })
		awaitWriterMarked(t, env.Universal, "ww", 1)

		_, err = rw.TryRLock(as(ctx, "r2"))
		require.ErrorIs(t, err, rwlock.ErrNotAcquired, "a waiting writer holds back new readers")
		_, err = rwlock.New(otherClient(t, env), "ww", rwlock.WithWaitTimeout(200*time.Millisecond)).RLock(as(ctx, "r3"))
		require.ErrorIs(t, err, rwlock.ErrNotAcquired, "on every process")
		_, err = rwlock.New(env.Universal, "ww", rwlock.WithWaitTimeout(200*time.Millisecond)).RLock(as(ctx, "r4"))
		require.ErrorIs(t, err, rwlock.ErrNotAcquired)

		start := time.Now()
		again, err := rw.RLock(r1)
		require.NoError(t, err, "but not re-entries")
		again2, err := rw.TryRLock(r1)
		require.NoError(t, err)
		require.Less(t, time.Since(start), prompt)
		require.Equal(t, 3, count(t, env.Universal, "ww", "r1"))
		requireWaiting(t, wait, "writer")

		require.NoError(t, rw.RUnlock(again2))
		require.NoError(t, rw.RUnlock(again))
		requireWaiting(t, wait, "writer while r1 still holds once")
		require.NoError(t, rw.RUnlock(r1))
		got := await(t, wait, prompt, "writer after the last reader left")
		require.NoError(t, got.err)
		require.Zero(t, markedWriters(t, env.Universal, "ww"), "the writer took its mark back")
		require.NoError(t, writer.Unlock(got.ctx))
		r2, err := rw.TryRLock(as(ctx, "r2"))
		require.NoError(t, err, "readers come in again")
		require.NoError(t, rw.RUnlock(r2))
		onlyBookkeepingLeft(t, env.Universal, "ww")
	})
}

// TestFailedTryLockLeavesNoMark: a TryLock that fails does not go on
// holding new readers back.
func TestFailedTryLockLeavesNoMark(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		rw := rwlock.New(env.Universal, "tl")
		r, err := rw.RLock(ctx)
		require.NoError(t, err)
		_, err = rw.TryLock(ctx)
		require.ErrorIs(t, err, rwlock.ErrNotAcquired)
		require.Zero(t, markedWriters(t, env.Universal, "tl"))
		r2, err := rw.TryRLock(ctx)
		require.NoError(t, err)
		require.NoError(t, rw.RUnlock(r2))
		require.NoError(t, rw.RUnlock(r))
		onlyBookkeepingLeft(t, env.Universal, "tl")
	})
}

// TestWriterGivingUpWakesBlockedReaders: a writer that stops waiting takes
// its mark back and wakes the readers it held back at once, instead of
// leaving them blocked until the mark's lease (30 s) ends.
func TestWriterGivingUpWakesBlockedReaders(t *testing.T) {
	for _, how := range []string{"wait timeout", "context cancelled"} {
		t.Run(how, func(t *testing.T) {
			each(t, func(t *testing.T, env *redistest.Env) {
				ctx := ctxT(t)
				rw := rwlock.New(env.Universal, "gu")
				r1, err := rw.RLock(as(ctx, "r1"))
				require.NoError(t, err)

				wctx, cancel := context.WithCancel(ctx)
				defer cancel()
				var opts []rwlock.Option
				if how == "wait timeout" {
					opts = append(opts, rwlock.WithWaitTimeout(2*time.Second))
				}
				writer := rwlock.New(otherClient(t, env), "gu", opts...)
				wait := goAcquire(func() (context.Context, error) { return writer.Lock(as(wctx, "w")) })
				awaitWriterMarked(t, env.Universal, "gu", 1)

				// Readers held back by the mark, on another process and on this one.
				other := rwlock.New(otherClient(t, env), "gu")
				blocked := []<-chan acq{
					goAcquire(func() (context.Context, error) { return other.RLock(as(ctx, "r2")) }),
					goAcquire(func() (context.Context, error) { return rw.RLock(as(ctx, "r3")) }),
				}
				if how == "context cancelled" {
					// The writer's client, r2's and env.Universal (r3) subscribe.
					awaitSubscribers(t, env.Universal, "gu", 3)
					cancel()
				}
				got := await(t, wait, settle, "writer giving up")
				gaveUp := time.Now()
				if how == "wait timeout" {
					require.ErrorIs(t, got.err, rwlock.ErrNotAcquired)
				} else {
					require.ErrorIs(t, got.err, context.Canceled)
				}
				require.Zero(t, markedWriters(t, env.Universal, "gu"), "the mark is taken back before Lock returns")
				for i, ch := range blocked {
					a := await(t, ch, prompt, fmt.Sprint("blocked reader ", i))
					require.NoError(t, a.err)
					t.Logf("reader %d in %v after the writer gave up", i, a.at.Sub(gaveUp))
					if i == 0 {
						require.NoError(t, other.RUnlock(a.ctx))
					} else {
						require.NoError(t, rw.RUnlock(a.ctx))
					}
				}
				require.NoError(t, rw.RUnlock(r1))
				onlyBookkeepingLeft(t, env.Universal, "gu")
			})
		})
	}
}

// TestCrashedReaderLeaseEnds: a reader on a fixed lease that never
// releases (as a crashed process) stops blocking writers when its lease
// ends, while a reader kept by the watchdog stays.
func TestCrashedReaderLeaseEnds(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		const lease = 500 * time.Millisecond
		crashed := rwlock.New(env.Universal, "cr", rwlock.WithLeaseTime(lease))
		a, err := crashed.RLock(as(ctx, "crashed"))
		require.NoError(t, err)
		live := rwlock.New(env.Universal, "cr")
		b, err := live.RLock(as(ctx, "live"))
		require.NoError(t, err)
		_, err = live.TryLock(as(ctx, "w"))
		require.ErrorIs(t, err, rwlock.ErrNotAcquired)

		env.FastForward(lease + 200*time.Millisecond)
		requireDone(t, a, "the crashed reader's hold") // the watchdog's clock is real
		require.ErrorIs(t, context.Cause(a), rwlock.ErrLockLost)
		require.False(t, exists(t, env.Universal, leaseKey("cr", "crashed", 1)))

		_, err = live.TryLock(as(ctx, "w"))
		require.ErrorIs(t, err, rwlock.ErrNotAcquired, "the watchdog-held reader still blocks writers")
		require.NoError(t, b.Err())
		require.Equal(t, 0, count(t, env.Universal, "cr", "crashed"), "the crashed reader was purged")
		require.Equal(t, 1, count(t, env.Universal, "cr", "live"))

		writer := rwlock.New(otherClient(t, env), "cr", rwlock.WithWatchdogTimeout(longWatchdog))
		wait := goAcquire(func() (context.Context, error) { return writer.Lock(as(ctx, "w")) })
		awaitWriterMarked(t, env.Universal, "cr", 1)
		requireWaiting(t, wait, "writer")
		require.NoError(t, live.RUnlock(b))
		got := await(t, wait, prompt, "writer after the live reader left")
		require.NoError(t, got.err)
		require.ErrorIs(t, crashed.RUnlock(a), rwlock.ErrLockLost)
		require.NoError(t, writer.Unlock(got.ctx))
		onlyBookkeepingLeft(t, env.Universal, "cr")
	})
}

// TestCrashedReaderAloneFreesLockAtLeaseEnd: a writer waiting behind only
// a crashed reader gets in when that reader's lease ends, without any
// unlock.
func TestCrashedReaderAloneFreesLockAtLeaseEnd(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		const lease = 500 * time.Millisecond
		crashed := rwlock.New(env.Universal, "cra", rwlock.WithLeaseTime(lease))
		a, err := crashed.RLock(as(ctx, "crashed"))
		require.NoError(t, err)
		writer := rwlock.New(otherClient(t, env), "cra")
		wait := goAcquire(func() (context.Context, error) { return writer.Lock(as(ctx, "w")) })
		awaitWriterMarked(t, env.Universal, "cra", 1)
		env.FastForward(lease + 200*time.Millisecond)
		got := await(t, wait, prompt, "writer after the crashed reader's lease")
		require.NoError(t, got.err)
		requireDone(t, a, "the crashed reader's hold")
		require.ErrorIs(t, context.Cause(a), rwlock.ErrLockLost)
		require.NoError(t, writer.Unlock(got.ctx))
		onlyBookkeepingLeft(t, env.Universal, "cra")
	})
}

// TestLastLiveReaderFreesLockDespiteCrashedReader: when the last live
// reader leaves, the lock is free even though a crashed reader's field
// (whose lease keys have all expired) is still in the hash: the hash is
// deleted and the unlock is published, so that waiters of other processes
// (a Redisson writer, which does not purge) are not held back for the
// rest of the hash's TTL.
func TestLastLiveReaderFreesLockDespiteCrashedReader(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		const lease = 300 * time.Millisecond
		crashed := rwlock.New(env.Universal, "crl", rwlock.WithLeaseTime(lease))
		a, err := crashed.RLock(as(ctx, "crashed"))
		require.NoError(t, err)
		live := rwlock.New(env.Universal, "crl")
		b, err := live.RLock(as(ctx, "live"))
		require.NoError(t, err)
		env.FastForward(lease + 200*time.Millisecond)
		requireDone(t, a, "the crashed reader's hold")
		require.False(t, exists(t, env.Universal, leaseKey("crl", "crashed", 1)))

		sub, err := redistest.Subscribe(ctx, otherClient(t, env), channelOf("crl")) // SSUBSCRIBE on a cluster
		require.NoError(t, err)
		defer sub.Close()
		require.NoError(t, live.RUnlock(b))
		require.False(t, exists(t, env.Universal, "crl"),
			"the last live reader's RUnlock leaves the hash behind (fields %v, pttl %v)",
			env.Universal.HGetAll(ctx, "crl").Val(), env.Universal.PTTL(ctx, "crl").Val())
		select {
		case <-sub.Channel():
		case <-time.After(prompt):
			t.Fatal("the unlock that freed the lock was not published")
		}
		require.ErrorIs(t, crashed.RUnlock(a), rwlock.ErrLockLost)
		onlyBookkeepingLeft(t, env.Universal, "crl")
	})
}

func TestWatchdogKeepsReadHoldThroughFiveLeases(t *testing.T) {
	t.Run("redis", func(t *testing.T) {
		srv := redistest.StartServer(t)
		rdb := srv.Client(t)
		ctx := ctxT(t)
		const timeout = 300 * time.Millisecond
		rw := rwlock.New(rdb, "wd", rwlock.WithWatchdogTimeout(timeout))
		r, err := rw.RLock(as(ctx, "r"))
		require.NoError(t, err)
		w, err := rwlock.New(rdb, "wdw", rwlock.WithWatchdogTimeout(timeout)).Lock(as(ctx, "w"))
		require.NoError(t, err)
		end := time.Now().Add(5*timeout + timeout/2)
		for i := 0; time.Now().Before(end); i++ {
			require.NoError(t, r.Err())
			require.NoError(t, w.Err())
			require.Equal(t, 1, count(t, rdb, "wd", "r"))
			require.True(t, exists(t, rdb, leaseKey("wd", "r", 1)), "the reader's lease key is renewed")
			require.Equal(t, 1, count(t, rdb, "wdw", "w:write"))
			if i%4 == 0 {
				// A writer would purge the reader if its lease key had lapsed.
				_, err = rw.TryLock(as(ctx, "x"))
				require.ErrorIs(t, err, rwlock.ErrNotAcquired)
			}
			time.Sleep(25 * time.Millisecond)
		}
		require.NoError(t, rw.RUnlock(r))
		require.NoError(t, rwlock.New(rdb, "wdw").Unlock(w))
		onlyBookkeepingLeft(t, rdb, "wd", "wdw")
	})
	t.Run("miniredis", func(t *testing.T) {
		mr, rdb := redistest.Miniredis(t)
		ctx := ctxT(t)
		clk := watchdog.NewFakeClock(time.Unix(1_700_000_000, 0))
		wd := watchdog.New(watchdog.WithClock(clk))
		rw := rwlock.New(rdb, "wd", rwlock.WithWatchdog(wd)) // default 30 s lease
		r, err := rw.RLock(as(ctx, "r"))
		require.NoError(t, err)
		key := leaseKey("wd", "r", 1)
		for i := 1; i <= 15; i++ { // 15 renewals of 10 s = 5 leases of 30 s
			require.Eventually(t, func() bool { return clk.Pending() > 0 }, settle, time.Millisecond)
			clk.Advance(10 * time.Second)
			require.Eventually(t, func() bool { return wd.Stats().Renewed == int64(i) }, settle, time.Millisecond,
				"renewal %d: %+v pending %d", i, wd.Stats(), clk.Pending())
			mr.FastForward(10 * time.Second)
			require.True(t, mr.Exists("wd"), "after %d renewals", i)
			require.True(t, mr.Exists(key), "lease key after %d renewals", i)
			require.Greater(t, mr.TTL(key), 15*time.Second)
			require.Greater(t, mr.TTL("wd"), 15*time.Second)
			_, err = rw.TryLock(as(ctx, "x"))
			require.ErrorIs(t, err, rwlock.ErrNotAcquired)
		}
		require.NoError(t, r.Err())
		require.NoError(t, rw.RUnlock(r))
		require.False(t, mr.Exists("wd"))
		require.False(t, mr.Exists(key))
		require.Zero(t, wd.Stats().Held)
	})
}

func TestDeletedHashReportedLost(t *testing.T) {
	type side struct {
		name   string
		lock   func(rw *rwlock.RWMutex, ctx context.Context, opts ...rwlock.LockOption) (context.Context, error)
		unlock func(rw *rwlock.RWMutex, ctx context.Context) error
	}
	sides := []side{
		{"read", (*rwlock.RWMutex).RLock, (*rwlock.RWMutex).RUnlock},
		{"write", (*rwlock.RWMutex).Lock, (*rwlock.RWMutex).Unlock},
	}
	for _, s := range sides {
		t.Run(s.name+"/miniredis", func(t *testing.T) {
			mr, rdb := redistest.Miniredis(t)
			ctx := ctxT(t)
			clk := watchdog.NewFakeClock(time.Unix(1_700_000_000, 0))
			wd := watchdog.New(watchdog.WithClock(clk))
			rw := rwlock.New(rdb, "del", rwlock.WithWatchdog(wd))
			held, err := s.lock(rw, ctx)
			require.NoError(t, err)
			mr.Del("del")
			require.Eventually(t, func() bool { return clk.Pending() > 0 }, settle, time.Millisecond)
			clk.Advance(10 * time.Second) // one renewal interval of the 30 s lease
			requireDone(t, held, "deleted lock")
			require.ErrorIs(t, context.Cause(held), rwlock.ErrLockLost)
			err = s.unlock(rw, held)
			require.ErrorIs(t, err, rwlock.ErrLockLost)
			require.ErrorContains(t, err, `"del"`)
		})
		t.Run(s.name+"/redis", func(t *testing.T) {
			srv := redistest.StartServer(t)
			rdb := srv.Client(t)
			ctx := ctxT(t)
			const timeout = 900 * time.Millisecond // renewed every 300 ms
			rw := rwlock.New(rdb, "del", rwlock.WithWatchdogTimeout(timeout))
			held, err := s.lock(rw, ctx)
			require.NoError(t, err)
			require.NoError(t, rdb.Del(ctx, "del").Err())
			start := time.Now()
			requireDone(t, held, "deleted lock")
			took := time.Since(start)
			t.Logf("deleted hash reported after %v (renewal interval %v)", took, timeout/3)
			require.Less(t, took, timeout, "reported before the lease would have lapsed")
			require.ErrorIs(t, context.Cause(held), rwlock.ErrLockLost)
			require.ErrorIs(t, s.unlock(rw, held), rwlock.ErrLockLost)
		})
	}
}

// With WithHoldScopedToContext, a hold ends with its acquiring context.
func TestAcquiringContextEndedFreesHold(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		rw := rwlock.New(env.Universal, "scoped", rwlock.WithHoldScopedToContext())
		for _, s := range []string{"read", "write"} {
			parent, cancel := context.WithCancel(ctxT(t))
			var held context.Context
			var err error
			if s == "read" {
				held, err = rw.RLock(parent)
			} else {
				held, err = rw.Lock(parent)
			}
			require.NoError(t, err, s)
			cancel()
			require.Eventually(t, func() bool { return !exists(t, env.Universal, "scoped") }, settle, poll,
				"%s hold released in the background", s)
			require.ErrorIs(t, held.Err(), context.Canceled)
			if s == "read" {
				require.NoError(t, rw.RUnlock(held), "RUnlock of a hold its context ended is nil")
				require.ErrorIs(t, rw.RUnlock(held), rwlock.ErrNotHeld, "but only once")
			} else {
				require.NoError(t, rw.Unlock(held), "Unlock of a hold its context ended is nil")
				require.ErrorIs(t, rw.Unlock(held), rwlock.ErrNotHeld, "but only once")
			}
		}
		// The read hold a downgrade returns is scoped like the write hold.
		parent, cancel := context.WithCancel(ctxT(t))
		w, err := rw.Lock(parent)
		require.NoError(t, err)
		d, err := rw.Downgrade(w)
		require.NoError(t, err)
		cancel()
		require.Eventually(t, func() bool { return !exists(t, env.Universal, "scoped") }, settle, poll)
		require.NoError(t, rw.RUnlock(d))
		onlyBookkeepingLeft(t, env.Universal, "scoped")
	})
}

// By default the acquiring context bounds the wait only: a hold of either
// side, and the read hold a downgrade returns, outlive it.
func TestAcquiringContextBoundsWaitOnly(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		rw := rwlock.New(env.Universal, "waitonly")
		for _, s := range []string{"read", "write", "downgrade"} {
			parent, cancel := context.WithTimeout(ctxT(t), 200*time.Millisecond)
			var held context.Context
			var err error
			switch s {
			case "read":
				held, err = rw.RLock(parent)
			case "write":
				held, err = rw.Lock(parent)
			case "downgrade":
				var w context.Context
				w, err = rw.Lock(parent)
				require.NoError(t, err)
				held, err = rw.Downgrade(w)
			}
			require.NoError(t, err, s)
			<-parent.Done()
			cancel()
			time.Sleep(100 * time.Millisecond) // a scoped hold would be gone by now
			require.NoError(t, held.Err(), "%s: the hold outlives the wait's deadline", s)
			require.True(t, exists(t, env.Universal, "waitonly"), s)
			if s == "write" {
				require.NoError(t, rw.Unlock(held))
			} else {
				require.NoError(t, rw.RUnlock(held))
			}
			require.ErrorIs(t, context.Cause(held), context.Canceled)
			require.False(t, exists(t, env.Universal, "waitonly"), s)
		}
		onlyBookkeepingLeft(t, env.Universal, "waitonly")
	})
}

func TestUnlockWorksOnDoneContext(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		rw := rwlock.New(env.Universal, "done")
		r, err := rw.RLock(ctx)
		require.NoError(t, err)
		derived, cancel := context.WithCancel(r)
		cancel()
		require.NoError(t, rw.RUnlock(derived))
		w, err := rw.Lock(ctx)
		require.NoError(t, err)
		derived, cancel = context.WithCancel(w)
		cancel()
		require.NoError(t, rw.Unlock(derived))
		require.False(t, exists(t, env.Universal, "done"))
	})
}

func TestBadInputWritesNothing(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		cases := map[string]*rwlock.RWMutex{
			"nil client":       rwlock.New(nil, "a"),
			"empty name":       rwlock.New(env.Universal, ""),
			"zero lease":       rwlock.New(env.Universal, "a", rwlock.WithLeaseTime(0)),
			"negative lease":   rwlock.New(env.Universal, "a", rwlock.WithLeaseTime(-time.Second)),
			"zero watchdog":    rwlock.New(env.Universal, "a", rwlock.WithWatchdogTimeout(0)),
			"negative wait":    rwlock.New(env.Universal, "a", rwlock.WithWaitTimeout(-1)),
			"zero unlock wait": rwlock.New(env.Universal, "a", rwlock.WithUnlockTimeout(0)),
			"zero value":       new(rwlock.RWMutex),
		}
		for name, rw := range cases {
			_, err := rw.RLock(ctx)
			require.ErrorIs(t, err, rwlock.ErrInvalidArgument, name)
			require.ErrorContains(t, err, "rwlock", name)
			_, err = rw.TryRLock(ctx)
			require.ErrorIs(t, err, rwlock.ErrInvalidArgument, name)
			require.ErrorIs(t, rw.RUnlock(ctx), rwlock.ErrInvalidArgument, name)
			_, err = rw.Lock(ctx)
			require.ErrorIs(t, err, rwlock.ErrInvalidArgument, name)
			_, err = rw.TryLock(ctx)
			require.ErrorIs(t, err, rwlock.ErrInvalidArgument, name)
			require.ErrorIs(t, rw.Unlock(ctx), rwlock.ErrInvalidArgument, name)
			_, err = rw.Downgrade(ctx)
			require.ErrorIs(t, err, rwlock.ErrInvalidArgument, name)
			for _, s := range []*rwlock.Side{rw.ReadLocker(), rw.WriteLocker()} {
				_, err = s.Lock(ctx)
				require.ErrorIs(t, err, rwlock.ErrInvalidArgument, name)
				_, err = s.TryLock(ctx)
				require.ErrorIs(t, err, rwlock.ErrInvalidArgument, name)
				require.ErrorIs(t, s.Unlock(ctx), rwlock.ErrInvalidArgument, name)
			}
		}
		_, err := rwlock.New(nil, "a").Lock(ctx)
		require.ErrorContains(t, err, "nil redis client")
		_, err = rwlock.New(env.Universal, "").RLock(ctx)
		require.ErrorContains(t, err, "empty lock name")

		good := rwlock.New(env.Universal, "a")
		// A nil ctx is refused, not a panic.
		{
			_, err = good.RLock(nil) //lint:ignore SA1012 a nil ctx on purpose: it must be refused, not panic
			require.ErrorIs(t, err, rwlock.ErrInvalidArgument)
			_, err = good.TryRLock(nil) //lint:ignore SA1012 a nil ctx on purpose: it must be refused, not panic
			require.ErrorIs(t, err, rwlock.ErrInvalidArgument)
			_, err = good.Lock(nil) //lint:ignore SA1012 a nil ctx on purpose: it must be refused, not panic
			require.ErrorIs(t, err, rwlock.ErrInvalidArgument)
			_, err = good.TryLock(nil) //lint:ignore SA1012 a nil ctx on purpose: it must be refused, not panic
			require.ErrorIs(t, err, rwlock.ErrInvalidArgument)
			require.ErrorIs(t, good.RUnlock(nil), rwlock.ErrInvalidArgument) //lint:ignore SA1012 a nil ctx on purpose: it must be refused, not panic
			require.ErrorIs(t, good.Unlock(nil), rwlock.ErrInvalidArgument)  //lint:ignore SA1012 a nil ctx on purpose: it must be refused, not panic
			_, err = good.Downgrade(nil)                                     //lint:ignore SA1012 a nil ctx on purpose: it must be refused, not panic
			require.ErrorIs(t, err, rwlock.ErrInvalidArgument)
			require.ErrorContains(t, err, "nil context")
		}
		n, err := env.Universal.DBSize(ctx).Result()
		require.NoError(t, err)
		require.Zero(t, n, "nothing written to Redis")
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

func TestAcquireSpans(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		rec := tracetest.NewSpanRecorder()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
		defer func() { _ = tp.Shutdown(context.Background()) }()
		rw := rwlock.New(env.Universal, "traced", rwlock.WithTracerProvider(tp))
		r, err := rw.RLock(ctx) // 0
		require.NoError(t, err)
		inner, err := rw.RLock(r) // 1
		require.NoError(t, err)
		_, err = rw.TryLock(ctx) // 2
		require.ErrorIs(t, err, rwlock.ErrNotAcquired)
		require.NoError(t, rw.RUnlock(inner))
		require.NoError(t, rw.RUnlock(r))
		w, err := rw.Lock(ctx) // 3
		require.NoError(t, err)
		_, err = rw.TryRLock(ctx) // 4
		require.ErrorIs(t, err, rwlock.ErrNotAcquired)
		require.NoError(t, rw.Unlock(w))

		spans, releases := acquireSpans(rec)
		require.Len(t, spans, 5)
		require.Equal(t, 3, releases, "RUnlock, RUnlock, Unlock")
		want := []struct {
			name, side, outcome string
			reentrant           bool
		}{
			{tracing.SpanAcquireReadLock, "read", tracing.OutcomeAcquired, false},
			{tracing.SpanAcquireReadLock, "read", tracing.OutcomeAcquired, true},
			{tracing.SpanAcquireWriteLock, "write", tracing.OutcomeNotAcquired, false},
			{tracing.SpanAcquireWriteLock, "write", tracing.OutcomeAcquired, false},
			{tracing.SpanAcquireReadLock, "read", tracing.OutcomeNotAcquired, false},
		}
		for i, s := range spans {
			a := attrs(s.Attributes())
			require.Equal(t, want[i].name, s.Name(), i)
			require.Equal(t, tracing.ScopeName, s.InstrumentationScope().Name)
			require.Equal(t, "traced", a[tracing.LockName].AsString(), i)
			require.Equal(t, "rwlock", a[tracing.Primitive].AsString(), i)
			require.Equal(t, want[i].side, a[tracing.Side].AsString(), i)
			require.Equal(t, want[i].outcome, a[tracing.Outcome].AsString(), i)
			require.NotEmpty(t, a[tracing.Owner].AsString(), i)
			require.EqualValues(t, 30000, a[tracing.LeaseMillis].AsInt64(), i)
			require.Equal(t, codes.Unset, s.Status().Code, "%d: contention on a Try is not an error", i)
			if want[i].outcome == tracing.OutcomeAcquired {
				require.Equal(t, want[i].reentrant, a[tracing.Reentrant].AsBool(), i)
				require.Positive(t, a[tracing.FencingToken].AsInt64(), i)
				require.EqualValues(t, 1, a[tracing.Attempts].AsInt64(), i)
			}
		}
	})
}

func attrs(kvs []attribute.KeyValue) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range kvs {
		m[kv.Key] = kv.Value
	}
	return m
}

// TestWriteUnlockWakesAllReaders: five readers waiting behind a writer all
// get in when it unlocks, together (they are inside at the same time),
// well before the 30 s lease a missed wake-up would wait for.
func TestWriteUnlockWakesAllReaders(t *testing.T) {
	for _, layout := range []string{"one client", "five clients"} {
		t.Run(layout, func(t *testing.T) {
			each(t, func(t *testing.T, env *redistest.Env) {
				ctx := ctxT(t)
				const n = 5
				rw := rwlock.New(env.Universal, "all")
				w, err := rw.Lock(as(ctx, "w"))
				require.NoError(t, err)

				var inside atomic.Int32
				type result struct {
					err     error
					at      time.Time
					overlap bool
				}
				results := make(chan result, n)
				var wg sync.WaitGroup
				for i := range n {
					c := env.Universal
					if layout == "five clients" {
						c = otherClient(t, env)
					}
					h := rwlock.New(c, "all")
					wg.Add(1)
					go func() {
						defer wg.Done()
						r, err := h.RLock(as(ctx, fmt.Sprint("r", i)))
						if err != nil {
							results <- result{err: err}
							return
						}
						res := result{at: time.Now()}
						inside.Add(1)
						deadline := time.Now().Add(settle)
						for time.Now().Before(deadline) && inside.Load() < n {
							time.Sleep(time.Millisecond)
						}
						res.overlap = inside.Load() == n
						res.err = h.RUnlock(r)
						results <- res
					}()
				}
				if layout == "five clients" {
					awaitSubscribers(t, env.Universal, "all", n)
				} else {
					awaitSubscribers(t, env.Universal, "all", 1)
					time.Sleep(100 * time.Millisecond) // let the others queue behind it
				}
				require.Zero(t, inside.Load())
				unlocked := time.Now()
				require.NoError(t, rw.Unlock(w))
				wg.Wait()
				close(results)
				var last time.Duration
				for res := range results {
					require.NoError(t, res.err)
					require.True(t, res.overlap, "every reader was inside at once")
					last = max(last, res.at.Sub(unlocked))
				}
				t.Logf("all %d readers in within %v of the write unlock", n, last)
				require.Less(t, last, prompt)
				onlyBookkeepingLeft(t, env.Universal, "all")
			})
		})
	}
}

// TestLastReaderUnlockWakesWriter: a writer waiting behind two readers
// gets in as soon as the last one leaves, not at its fallback retry (a
// third of its 90 s lease).
func TestLastReaderUnlockWakesWriter(t *testing.T) {
	for _, layout := range []string{"same client", "other client"} {
		t.Run(layout, func(t *testing.T) {
			each(t, func(t *testing.T, env *redistest.Env) {
				ctx := ctxT(t)
				rw := rwlock.New(env.Universal, "lw")
				r1, err := rw.RLock(as(ctx, "r1"))
				require.NoError(t, err)
				r2, err := rw.RLock(as(ctx, "r2"))
				require.NoError(t, err)
				c := env.Universal
				if layout == "other client" {
					c = otherClient(t, env)
				}
				writer := rwlock.New(c, "lw", rwlock.WithWatchdogTimeout(longWatchdog))
				wait := goAcquire(func() (context.Context, error) { return writer.Lock(as(ctx, "w")) })
				awaitWriterMarked(t, env.Universal, "lw", 1)
				require.NoError(t, rw.RUnlock(r1))
				time.Sleep(50 * time.Millisecond) // a chance to get in wrongly
				requireWaiting(t, wait, "writer while r2 reads")
				start := time.Now()
				require.NoError(t, rw.RUnlock(r2))
				got := await(t, wait, prompt, "writer after the last reader")
				require.NoError(t, got.err)
				t.Logf("writer in %v after the last reader left", got.at.Sub(start))
				require.NoError(t, writer.Unlock(got.ctx))
				onlyBookkeepingLeft(t, env.Universal, "lw")
			})
		})
	}
}

// TestKeysLeftAfterRelease runs every path (shared and reentrant reads, a
// writer that waited and got in, one that gave up, a failed TryLock, the
// writer's own read, a downgrade) and checks that nothing but the fencing
// counter and unlock latches is left once all is released; also for a
// name with its own hash tag.
func TestKeysLeftAfterRelease(t *testing.T) {
	for _, name := range []string{"res", "{app}:res"} {
		t.Run(name, func(t *testing.T) {
			each(t, func(t *testing.T, env *redistest.Env) {
				ctx := ctxT(t)
				rw := rwlock.New(env.Universal, name)
				r1, err := rw.RLock(as(ctx, "r1"))
				require.NoError(t, err)
				r1b, err := rw.RLock(r1)
				require.NoError(t, err)
				r2, err := rw.RLock(as(ctx, "r2"))
				require.NoError(t, err)
				prefix := "{" + name + "}"
				if strings.Contains(name, "{") {
					prefix = name
				}
				require.True(t, exists(t, env.Universal, prefix+":r1:rwlock_timeout:2"), "Redisson's lease key names")
				_, err = rw.TryLock(as(ctx, "t"))
				require.ErrorIs(t, err, rwlock.ErrNotAcquired)
				_, err = rwlock.New(otherClient(t, env), name, rwlock.WithWaitTimeout(100*time.Millisecond)).Lock(as(ctx, "g"))
				require.ErrorIs(t, err, rwlock.ErrNotAcquired)
				writer := rwlock.New(otherClient(t, env), name)
				wait := goAcquire(func() (context.Context, error) { return writer.Lock(as(ctx, "w")) })
				require.Eventually(t, func() bool {
					n, err := env.Universal.ZCard(ctx, prefix+":rwlock_write_waiters").Result()
					return err == nil && n == 1
				}, settle, poll)
				require.NoError(t, rw.RUnlock(r1)) // outer first: out of order
				require.NoError(t, rw.RUnlock(r2))
				require.NoError(t, rw.RUnlock(r1b))
				got := await(t, wait, prompt, "writer")
				require.NoError(t, got.err)
				// The writer's own read and a downgraded re-entry, on
				// contexts of the same owner that the write hold does not
				// scope, so that they outlive it.
				wr, err := writer.RLock(as(ctx, "w"))
				require.NoError(t, err)
				w2, err := writer.Lock(as(ctx, "w"))
				require.NoError(t, err)
				d, err := writer.Downgrade(w2)
				require.NoError(t, err)
				require.NoError(t, writer.Unlock(got.ctx))
				require.NoError(t, wr.Err())
				require.NoError(t, d.Err())
				require.NoError(t, writer.RUnlock(wr))
				require.NoError(t, writer.RUnlock(d))
				require.False(t, exists(t, env.Universal, name))
				onlyBookkeepingLeft(t, env.Universal, name)
				token := "redisson_lock_token:" + prefix
				require.True(t, exists(t, env.Universal, token), "the fencing counter stays, as RFencedLock's")
			})
		})
	}
}

func TestSides(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		rw := rwlock.New(env.Universal, "sides")
		rs, ws := rw.ReadLocker(), rw.WriteLocker()
		require.Equal(t, "sides", rs.Name())
		require.Equal(t, "sides", ws.Name())
		r1, err := rs.Lock(ctx)
		require.NoError(t, err)
		r2, err := rs.TryLock(ctx)
		require.NoError(t, err, "the read side shares")
		_, err = ws.TryLock(ctx)
		require.ErrorIs(t, err, rwlock.ErrNotAcquired)
		require.ErrorIs(t, ws.Unlock(r1), rwlock.ErrNotHeld, "a read hold is not the write side's")
		require.NoError(t, rs.Unlock(r1))
		require.NoError(t, rs.Unlock(r2))
		w, err := ws.Lock(ctx)
		require.NoError(t, err)
		_, err = rs.TryLock(ctx)
		require.ErrorIs(t, err, rwlock.ErrNotAcquired)
		_, err = ws.TryLock(ctx)
		require.ErrorIs(t, err, rwlock.ErrNotAcquired)
		require.NoError(t, ws.Unlock(w))
		w, err = ws.TryLock(ctx)
		require.NoError(t, err)
		require.NoError(t, ws.Unlock(w))
		onlyBookkeepingLeft(t, env.Universal, "sides")
	})
}

func TestFencingTokensIncrease(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		rw := rwlock.New(env.Universal, "fence")
		_, ok := rwlock.FencingToken(ctx)
		require.False(t, ok)
		var last int64
		next := func(held context.Context, err error) context.Context {
			t.Helper()
			require.NoError(t, err)
			tok, ok := rwlock.FencingToken(held)
			require.True(t, ok)
			require.Greater(t, tok, last)
			last = tok
			return held
		}
		r := next(rw.RLock(ctx))
		r2 := next(rw.RLock(r)) // a re-entry draws one too
		r3 := next(rw.RLock(ctx))
		require.NoError(t, rw.RUnlock(r3))
		require.NoError(t, rw.RUnlock(r2))
		require.NoError(t, rw.RUnlock(r))
		// Sibling contexts of one owner, so that no hold ends with another.
		w := next(rw.Lock(as(ctx, "f")))
		w2 := next(rw.Lock(as(ctx, "f")))
		wr := next(rw.RLock(as(ctx, "f")))
		d := next(rw.Downgrade(w2))
		require.NoError(t, rw.RUnlock(wr))
		require.NoError(t, rw.Unlock(w))
		require.NoError(t, rw.RUnlock(d))
		require.False(t, exists(t, env.Universal, "fence"))
		v, err := env.Universal.Get(ctx, tokenKey("fence")).Int64()
		require.NoError(t, err)
		require.Equal(t, last, v, "RFencedLock's counter key")
	})
}
