package lease

import (
	"context"
	"embed"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/relock-go/relock/internal/conn"
	"github.com/relock-go/relock/internal/errs"
	"github.com/relock-go/relock/internal/scripts"
	"github.com/relock-go/relock/internal/testkit/redistest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(redistest.Main(m)) }

//go:embed testdata/*.lua
var testFS embed.FS

var stringRenewer = &RenewScript{Lua: scripts.Load(testFS, "testdata/renew_string.lua"), KeysPer: 1}

var epoch = time.Unix(1_700_000_000, 0)

type lostRecorder struct {
	mu   sync.Mutex
	errs []error
}

func (r *lostRecorder) Lost(err error) {
	r.mu.Lock()
	r.errs = append(r.errs, err)
	r.mu.Unlock()
}

func (r *lostRecorder) n() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.errs)
}

func hold(t *testing.T, ctx context.Context, w *Watchdog, c redis.UniversalClient, key string, timeout time.Duration, renew bool) *Lease {
	t.Helper()
	sent := w.Now()
	require.NoError(t, c.Set(ctx, key, "me", timeout).Err())
	return w.Start(Spec{Renewer: stringRenewer, Targets: []Target{{Client: conn.Of(c), Keys: []string{key}, Arg: "me"}},
		Timeout: timeout, Renew: renew, ID: ID{Lock: key}, Name: key, Primitive: "test"}, sent)
}

// advance moves the fake clock once the wheel's goroutine sleeps on it.
func advance(t *testing.T, clk *FakeClock, d time.Duration) {
	t.Helper()
	require.Eventually(t, func() bool { return clk.Pending() > 0 }, 5*time.Second, time.Millisecond)
	clk.Advance(d)
}

func TestBatchedRenewalOneRoundTripPerTick(t *testing.T) {
	mr, rdb := redistest.Miniredis(t)
	ctx := context.Background()
	clk := NewFakeClock(epoch)
	w := New(WithClock(clk), WithBatchSize(100))
	const n = 250
	require.NoError(t, rdb.ScriptLoad(ctx, stringRenewer.Lua.Source()).Err()) // else the first round also loads it
	leases := make([]*Lease, n)
	for i := range leases {
		leases[i] = hold(t, ctx, w, rdb, fmt.Sprintf("k%d", i), 30*time.Second, true)
	}
	defer func() {
		for _, l := range leases {
			l.Stop()
		}
	}()
	require.Equal(t, n, w.Stats().Held)

	for round := 1; round <= 5; round++ {
		mr.FastForward(10 * time.Second)
		advance(t, clk, 10*time.Second)
		require.Eventually(t, func() bool { return w.Stats().Renewed == int64(round*n) }, 5*time.Second, time.Millisecond)
		st := w.Stats()
		require.EqualValues(t, round, st.RoundTrips, "one pipeline per tick for all leases")
		require.EqualValues(t, round*3, st.Scripts, "250 leases in scripts of at most 100")
		require.Equal(t, 30*time.Second, mr.TTL("k0"), "TTL reset by the renewal")
	}
	// 50 s of lease time have passed on a 30 s lease: only renewal kept it.
	require.True(t, mr.Exists("k249"))
	require.Zero(t, w.Stats().Lost)
}

func TestLostWhenKeyGone(t *testing.T) {
	mr, rdb := redistest.Miniredis(t)
	clk := NewFakeClock(epoch)
	w := New(WithClock(clk))
	l := hold(t, context.Background(), w, rdb, "gone", 30*time.Second, true)
	var rec lostRecorder
	l.OnLost(&rec)
	mr.Del("gone")
	advance(t, clk, 10*time.Second)
	require.Eventually(t, func() bool { return rec.n() == 1 }, 5*time.Second, time.Millisecond)
	require.ErrorIs(t, rec.errs[0], errs.ErrLockLost)
	require.ErrorContains(t, rec.errs[0], "gone")
	require.ErrorIs(t, l.Lost(), errs.ErrLockLost)
	require.Nil(t, w.Find(conn.Of(rdb), ID{Lock: "gone"}), "a lost lease is unregistered")
	// A callback registered after the loss runs at once.
	var late lostRecorder
	l.OnLost(&late)
	require.Equal(t, 1, late.n())
	l.Stop()
}

func TestErrorsRetriedSoonThenLostBeforeServerLapse(t *testing.T) {
	mr, rdb := redistest.Miniredis(t)
	clk := NewFakeClock(epoch)
	w := New(WithClock(clk))
	const timeout = 3 * time.Second
	sent := clk.Now()
	l := hold(t, context.Background(), w, rdb, "flaky", timeout, true)
	var rec lostRecorder
	l.OnLost(&rec)
	mr.SetError("ERR fake failure")
	defer mr.SetError("")

	// Step the clock in small increments; every failed renewal is retried
	// after timeout/30 = 100 ms, not a whole interval later.
	var lostAt time.Time
	for i := 0; i < 400 && rec.n() == 0; i++ {
		before := w.Stats().Errors
		advance(t, clk, 10*time.Millisecond)
		// let a renewal that fell due complete before moving on
		time.Sleep(200 * time.Microsecond)
		require.Eventually(t, func() bool {
			st := w.Stats()
			return st.Errors >= before && (rec.n() > 0 || clk.Pending() > 0)
		}, 5*time.Second, time.Millisecond)
		if rec.n() > 0 {
			lostAt = clk.Now()
		}
	}
	require.Equal(t, 1, rec.n())
	require.ErrorIs(t, rec.errs[0], errs.ErrLockLost)
	t.Logf("lost at %v: %v; %+v", lostAt.Sub(sent), rec.errs[0], w.Stats())
	require.Greater(t, w.Stats().Errors, int64(5), "errors are retried soon")
	require.False(t, lostAt.After(sent.Add(timeout)), "told no later than the lease could lapse (lost at %v)", lostAt.Sub(sent))
	require.True(t, lostAt.After(sent.Add(timeout-200*time.Millisecond)), "not told long before either (%v)", lostAt.Sub(sent))
	l.Stop()
}

func TestFixedLeaseLostWhenItEnds(t *testing.T) {
	_, rdb := redistest.Miniredis(t)
	clk := NewFakeClock(epoch)
	w := New(WithClock(clk))
	l := hold(t, context.Background(), w, rdb, "fixed", 2*time.Second, false)
	var rec lostRecorder
	l.OnLost(&rec)
	advance(t, clk, 1900*time.Millisecond)
	time.Sleep(5 * time.Millisecond)
	require.Zero(t, rec.n())
	require.Zero(t, w.Stats().RoundTrips, "a fixed lease is never renewed")
	advance(t, clk, 100*time.Millisecond)
	require.Eventually(t, func() bool { return rec.n() == 1 }, 5*time.Second, time.Millisecond)
	require.ErrorContains(t, rec.errs[0], "lease ended")
	l.Stop()
}

func TestStopSendsNoMoreRenewals(t *testing.T) {
	_, rdb := redistest.Miniredis(t)
	clk := NewFakeClock(epoch)
	w := New(WithClock(clk))
	l := hold(t, context.Background(), w, rdb, "stop", 30*time.Second, true)
	advance(t, clk, 10*time.Second)
	require.Eventually(t, func() bool { return w.Stats().Renewed == 1 }, 5*time.Second, time.Millisecond)
	l.Stop()
	rt := w.Stats().RoundTrips
	clk.Advance(time.Minute)
	time.Sleep(20 * time.Millisecond)
	require.Equal(t, rt, w.Stats().RoundTrips)
	require.Zero(t, w.Stats().Held)
}

// TestStopDoesNotWaitForAStalledReply: a renewal already handed to the
// network is sent; Stop need not wait for its reply (a stalled server
// would hold Unlock up), only for it to leave.
func TestStopDoesNotWaitForAStalledReply(t *testing.T) {
	srv := redistest.StartServer(t)
	rdb := srv.Client(t)
	clk := NewFakeClock(epoch)
	w := New(WithClock(clk))
	ctx := context.Background()
	l := hold(t, ctx, w, rdb, "inflight", 30*time.Second, true)
	// Block the server so the renewal stays in flight.
	admin := srv.Client(t)
	require.NoError(t, rdb.ScriptLoad(ctx, stringRenewer.Lua.Source()).Err())
	require.NoError(t, admin.ClientPause(ctx, 300*time.Millisecond).Err())
	advance(t, clk, 10*time.Second)
	require.Eventually(t, func() bool { return w.Stats().RoundTrips == 1 }, 5*time.Second, time.Millisecond)
	start := time.Now()
	l.Stop()
	waited := time.Since(start)
	require.Less(t, waited, 100*time.Millisecond, "Stop waited for the reply of a paused server")
	require.Zero(t, w.Stats().Errors)
}

func TestRealRedisKeepsLeaseThroughFiveTimeouts(t *testing.T) {
	srv := redistest.StartServer(t)
	rdb := srv.Client(t)
	w := New()
	ctx := context.Background()
	const timeout = 300 * time.Millisecond
	l := hold(t, ctx, w, rdb, "real", timeout, true)
	var rec lostRecorder
	l.OnLost(&rec)
	deadline := time.Now().Add(5 * timeout)
	for time.Now().Before(deadline) {
		require.EqualValues(t, 1, rdb.Exists(ctx, "real").Val())
		time.Sleep(20 * time.Millisecond)
	}
	require.Zero(t, rec.n())
	require.GreaterOrEqual(t, w.Stats().Renewed, int64(12))
	l.Stop()
	pttl := rdb.PTTL(ctx, "real").Val()
	time.Sleep(timeout + 50*time.Millisecond)
	require.EqualValues(t, 0, rdb.Exists(ctx, "real").Val(), "after Stop the key lapses (pttl was %v)", pttl)
}

func TestRealRedisKilledHolderTold(t *testing.T) {
	srv := redistest.StartServer(t)
	rdb := srv.Client(t, func(o *redis.Options) { o.MaxRetries = -1; o.DialTimeout = 50 * time.Millisecond })
	w := New()
	const timeout = 600 * time.Millisecond
	sent := time.Now()
	l := hold(t, context.Background(), w, rdb, "killed", timeout, true)
	var lostAt atomic.Int64
	done := make(chan error, 1)
	l.OnLost(LostFunc(func(err error) { lostAt.Store(int64(time.Since(sent))); done <- err }))
	time.Sleep(timeout / 2)
	killedAt := time.Since(sent)
	srv.Kill()
	select {
	case err := <-done:
		require.ErrorIs(t, err, errs.ErrLockLost)
	case <-time.After(5 * time.Second):
		t.Fatal("holder not told")
	}
	// The last renewal that succeeded was sent before the kill, so the key
	// lapses on the server no sooner than killedAt+timeout after sent...
	// and no later than that, the holder must have been told.
	require.LessOrEqual(t, time.Duration(lostAt.Load()), killedAt+timeout)
	l.Stop()
}

func TestClusterOneScriptPerSlot(t *testing.T) {
	cc := redistest.ClusterBackend().New(t).Universal.(*redis.ClusterClient)
	clk := NewFakeClock(epoch)
	w := New(WithClock(clk))
	ctx := context.Background()
	require.NoError(t, cc.ScriptLoad(ctx, stringRenewer.Lua.Source()).Err())
	// Keys under three hash tags: three slots, so one script each, in one
	// pipeline per master.
	var leases []*Lease
	masters := map[string]bool{}
	for i := range 30 {
		key := fmt.Sprintf("{tag%d}:k%d", i%3, i)
		leases = append(leases, hold(t, ctx, w, cc, key, 30*time.Second, true))
		m, err := cc.MasterForKey(ctx, key)
		require.NoError(t, err)
		masters[m.Options().Addr] = true
	}
	advance(t, clk, 10*time.Second)
	require.Eventually(t, func() bool { return w.Stats().Renewed == 30 }, 5*time.Second, time.Millisecond)
	st := w.Stats()
	require.Zero(t, st.Lost)
	require.EqualValues(t, len(masters), st.RoundTrips, "one pipeline per master")
	require.EqualValues(t, 3, st.Scripts, "one script per slot: %+v", st)
	for _, l := range leases {
		l.Stop()
	}
}

func TestLapsedAfterTheLossDeadline(t *testing.T) {
	_, rdb := redistest.Miniredis(t)
	clk := NewFakeClock(epoch)
	w := New(WithClock(clk))
	l := hold(t, context.Background(), w, rdb, "lapsed", 2*time.Second, false)
	l.Stop() // a stopped lease is renewed no more; its deadline stands
	clk.Advance(1900 * time.Millisecond)
	require.False(t, l.Lapsed(), "before the loss deadline (lease minus a 31 ms margin)")
	clk.Advance(100 * time.Millisecond)
	require.True(t, l.Lapsed(), "past the loss deadline")
}

func TestRenewalReloadsAScriptTheServerForgot(t *testing.T) {
	for _, b := range redistest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			env := b.New(t)
			ctx := context.Background()
			clk := NewFakeClock(epoch)
			w := New(WithClock(clk))
			require.NoError(t, env.Client.ScriptLoad(ctx, stringRenewer.Lua.Source()).Err())
			l := hold(t, ctx, w, env.Client, "forgot", 30*time.Second, true)
			defer l.Stop()

			// A restart or failover leaves the server without the script:
			// the round's EVALSHA is refused, and its EVAL loads it.
			require.NoError(t, env.Client.ScriptFlush(ctx).Err())
			advance(t, clk, 10*time.Second)
			require.Eventually(t, func() bool { return w.Stats().Renewed == 1 }, 5*time.Second, time.Millisecond)
			require.EqualValues(t, 2, w.Stats().RoundTrips, "NOSCRIPT, then EVAL")
			exists, err := env.Client.ScriptExists(ctx, stringRenewer.Lua.Hash()).Result()
			require.NoError(t, err)
			require.Equal(t, []bool{true}, exists, "the EVAL loaded the script")

			advance(t, clk, 10*time.Second)
			require.Eventually(t, func() bool { return w.Stats().Renewed == 2 }, 5*time.Second, time.Millisecond)
			require.EqualValues(t, 3, w.Stats().RoundTrips, "EVALSHA alone once loaded")
			require.Zero(t, w.Stats().Lost)
			require.NoError(t, l.Lost())
		})
	}
}
