package lock_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/testkit/redistest"
	"github.com/relock-go/relock/lock"
)

// A server busy with a long script answers BUSY to every acquire script.
// Lock resends its first try while it may (the server answers again once
// the script ends), but not past its wait bound: at the bound it returns
// ErrNotAcquired, with the server's BUSY, not when the script ends.
func TestWaitBoundHoldsWhileTheServerIsBusy(t *testing.T) {
	const busy, bound = 3 * time.Second, 300 * time.Millisecond
	check := func(t *testing.T, c *redis.Client) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		t0 := time.Now()
		_, err := lock.New(c, "busy:wait").Lock(ctx, lock.WithWaitTimeout(bound))
		took := time.Since(t0)
		t.Logf("Lock returned after %v: %v", took, err)
		require.ErrorIs(t, err, lock.ErrNotAcquired)
		require.Contains(t, err.Error(), "BUSY")
		require.Less(t, took, bound+200*time.Millisecond, "the wait bound held (the server was busy for %v)", busy)
	}
	onBusyServers(t, busy, check)
}

// TryLock on a server busy with a long script sends its attempt again
// for up to the unlock timeout (the server may answer in a moment), then
// returns the server's reply rather than ErrNotAcquired: nobody else was
// found to hold the lock. A context that ends first ends it then, with
// the reply that kept it waiting.
func TestTryLockOnABusyServer(t *testing.T) {
	const busy, patience = 4 * time.Second, time.Second
	check := func(t *testing.T, c *redis.Client) {
		m := lock.New(c, "busy:try", lock.WithUnlockTimeout(patience))
		t0 := time.Now()
		_, err := m.TryLock(context.Background())
		took := time.Since(t0)
		t.Logf("TryLock returned after %v: %v", took, err)
		require.Error(t, err)
		require.NotErrorIs(t, err, lock.ErrNotAcquired)
		require.ErrorContains(t, err, "BUSY")
		require.ErrorContains(t, err, `trylock lock "busy:try"`)
		// One try is answered at once; growing, jittered backoffs stop
		// the resends somewhat short of the unlock timeout.
		require.GreaterOrEqual(t, took, patience/10, "sent again while the server may answer")
		require.Less(t, took, patience+time.Second, "for the unlock timeout, not the script's %v", busy)

		ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
		defer cancel()
		t0 = time.Now()
		_, err = lock.New(c, "busy:try", lock.WithUnlockTimeout(time.Minute)).TryLock(ctx)
		took = time.Since(t0)
		t.Logf("TryLock under a 150ms context returned after %v: %v", took, err)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.ErrorContains(t, err, "BUSY", "the reply that kept it waiting")
		require.Less(t, took, time.Second, "the context's end, not the script's or the unlock timeout's")
	}
	onBusyServers(t, busy, check)
}

// onBusyServers runs check on miniredis, whose script calls a hook
// answers BUSY, and on a redis-server running a real script, each busy
// for busy from the start.
func onBusyServers(t *testing.T, busy time.Duration, check func(t *testing.T, c *redis.Client)) {
	t.Run("miniredis", func(t *testing.T) {
		_, c := redistest.Miniredis(t)
		var until atomic.Int64
		c.AddHook(busyHook{&until})
		until.Store(time.Now().Add(busy).UnixNano())
		check(t, c)
	})
	t.Run("redis", func(t *testing.T) {
		srv := redistest.StartServer(t, redistest.WithArgs("--busy-reply-threshold", "50"))
		c := srv.Client(t)
		wait := redistest.BusyScript(srv.Client(t, func(o *redis.Options) { o.ReadTimeout = busy + 2*time.Second }), busy)
		defer wait()
		redistest.RequireBusy(t, context.Background(), c)
		check(t, c)
	})
}

// busyHook answers every script call BUSY until the instant in until, as
// a server running a long script does.
type busyHook struct{ until *atomic.Int64 }

type busyReply struct{}

func (busyReply) Error() string { return "BUSY Redis is busy running a script." }
func (busyReply) RedisError()   {}

func (busyHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h busyHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if n := cmd.Name(); (n == "evalsha" || n == "eval") && time.Now().UnixNano() < h.until.Load() {
			cmd.SetErr(busyReply{})
			return cmd.Err()
		}
		return next(ctx, cmd)
	}
}

func (busyHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// A process that first meets a replicated master while it is busy with a
// long script is answered BUSY to the INFO and ROLE that count its
// replicas: that is no count, and the acquisitions after the script must
// still wait for the replica, not go unsynced until the count is read
// again.
func TestReplicaSyncAfterABusyFirstMeeting(t *testing.T) {
	g := redistest.StartReplicated(t, 1, redistest.WithArgs("--busy-reply-threshold", "50"))
	if g == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	admin := g.Master.Client(t)
	c := g.Master.Client(t) // a new client: its servers' replicas are not counted yet
	mu := lock.New(c, "busy:replicated")

	wait := redistest.BusyScript(g.Master.Client(t, func(o *redis.Options) { o.ReadTimeout = 5 * time.Second }), time.Second)
	redistest.RequireBusy(t, ctx, admin)
	_, err := mu.Lock(ctx, lock.WithWaitTimeout(200*time.Millisecond))
	require.ErrorContains(t, err, "BUSY")
	wait()

	before := waitCalls(t, ctx, admin)
	held, err := mu.Lock(ctx)
	require.NoError(t, err)
	require.NoError(t, mu.Unlock(held))
	require.Greater(t, waitCalls(t, ctx, admin), before, "the acquisition waited for the replica")
}
