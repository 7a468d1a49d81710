package lease

import (
	"bytes"
	"context"
	"fmt"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/conn"
	"github.com/relock-go/relock/internal/testkit/redistest"
)

// watchdogGoroutines counts the goroutines with a frame of w's methods on
// their stack (the wheel, a flush, a asideQueue), from a goroutine dump that
// shows the receiver: other tests' watchdogs may still be winding down.
func watchdogGoroutines(w *Watchdog) int {
	var buf bytes.Buffer
	if err := pprof.Lookup("goroutine").WriteTo(&buf, 2); err != nil {
		panic(err)
	}
	recv := fmt.Sprintf("(%p", w) // the first argument: (0xc000123456, ...
	n := 0
	for g := range strings.SplitSeq(buf.String(), "\n\n") {
		for line := range strings.SplitSeq(g, "\n") {
			if strings.Contains(line, "relock/internal/lease.(*Watchdog).") && strings.Contains(line, recv) {
				n++
				break
			}
		}
	}
	return n
}

// waitUntil polls cond without starting goroutines (require.Eventually
// starts some, which would blur a goroutine count).
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(5 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("not within 5 s: %s", what)
		}
	}
}

// TestOneGoroutineWhileFlushing: the wheel's goroutine sends a one-client
// round itself, several pipelines back to back, so that while a reply is
// awaited (the server is paused) the watchdog runs exactly one goroutine.
func TestOneGoroutineWhileFlushing(t *testing.T) {
	srv := redistest.StartServer(t)
	rdb := srv.Client(t)
	admin := srv.Client(t)
	ctx := context.Background()
	clk := NewFakeClock(epoch)
	w := New(WithClock(clk), WithBatchSize(50))
	w.pipeLeases = 100 // 250 leases: three pipelines of 100, 100, 50
	require.NoError(t, rdb.ScriptLoad(ctx, stringRenewer.Lua.Source()).Err())
	const n = 250
	leases := make([]*Lease, n)
	for i := range leases {
		leases[i] = hold(t, ctx, w, rdb, fmt.Sprintf("one%d", i), 30*time.Second, true)
	}
	defer func() {
		for _, l := range leases {
			l.Stop()
		}
	}()
	waitUntil(t, "wheel asleep", func() bool { return clk.Pending() > 0 })
	require.Equal(t, 1, watchdogGoroutines(w), "the wheel, asleep")

	const pause = 400 * time.Millisecond
	require.NoError(t, admin.ClientPause(ctx, pause).Err())
	paused := time.Now()
	clk.Advance(10 * time.Second)
	waitUntil(t, "first pipeline sent", func() bool { return w.Stats().RoundTrips >= 1 })
	most, samples := 0, 0
	for time.Since(paused) < pause-100*time.Millisecond {
		most = max(most, watchdogGoroutines(w))
		samples++
		time.Sleep(5 * time.Millisecond)
	}
	require.Zero(t, w.Stats().Renewed, "the reply came while the server was paused")
	require.Positive(t, samples)
	require.Equal(t, 1, most, "watchdog goroutines while a reply is awaited")
	require.Zero(t, w.stats.handoffs.Load())

	waitUntil(t, "all renewed", func() bool { return w.Stats().Renewed == n })
	st := w.Stats()
	require.EqualValues(t, 3, st.RoundTrips, "three pipelines: %+v", st)
	require.EqualValues(t, 5, st.Scripts, "scripts of at most 50 leases: %+v", st)
	require.Zero(t, st.Errors)
	waitUntil(t, "wheel asleep", func() bool { return clk.Pending() > 0 })
	require.Equal(t, 1, watchdogGoroutines(w))
}

// TestReplyTimeoutScalesWithTimeToLoss: a renewal whose reply takes longer
// than a tenth of the lease (the old fixed timeout) but comes before the
// lease could be lost renews it, with no error, on a client that applies
// context deadlines to its reads.
func TestReplyTimeoutScalesWithTimeToLoss(t *testing.T) {
	srv := redistest.StartServer(t)
	rdb := srv.Client(t, func(o *redis.Options) { o.ContextTimeoutEnabled = true })
	admin := srv.Client(t)
	ctx := context.Background()
	clk := NewFakeClock(epoch)
	w := New(WithClock(clk))
	const timeout = 3 * time.Second // a tenth: 300 ms
	l := hold(t, ctx, w, rdb, "slow", timeout, true)
	defer l.Stop()
	var rec lostRecorder
	l.OnLost(&rec)
	require.NoError(t, rdb.ScriptLoad(ctx, stringRenewer.Lua.Source()).Err())

	const pause = 700 * time.Millisecond
	require.NoError(t, admin.ClientPause(ctx, pause).Err())
	start := time.Now()
	advance(t, clk, timeout/3) // the renewal falls due; ~2 s to its loss
	require.Eventually(t, func() bool { return w.Stats().Renewed == 1 || w.Stats().Errors > 0 }, 5*time.Second, time.Millisecond)
	took := time.Since(start)
	st := w.Stats()
	require.Zero(t, st.Errors, "the reply was given up on after %v: %+v", took, st)
	require.EqualValues(t, 1, st.Renewed)
	require.Greater(t, took, timeout/10+100*time.Millisecond, "the server was not paused long enough to tell")
	require.Zero(t, rec.n())
}

// TestLateRoundKeepsPhases: leases taken 10 ms apart and renewed in one
// round because the wheel ran a second late keep their own phases, so they
// do not stay one clump: afterwards each tick renews about one of them.
func TestLateRoundKeepsPhases(t *testing.T) {
	_, rdb := redistest.Miniredis(t)
	ctx := context.Background()
	clk := NewFakeClock(epoch)
	w := New(WithClock(clk))
	const n = 100
	const timeout = 3 * time.Second // renewed every second
	require.NoError(t, rdb.ScriptLoad(ctx, stringRenewer.Lua.Source()).Err())
	leases := make([]*Lease, n)
	for i := range leases {
		if i > 0 {
			clk.Advance(10 * time.Millisecond) // nothing falls due before 1 s
		}
		leases[i] = hold(t, ctx, w, rdb, fmt.Sprintf("ph%d", i), timeout, true)
	}
	defer func() {
		for _, l := range leases {
			l.Stop()
		}
		// The wheel sleeps until a tick away, when it will see the empty
		// wheel (and end): let that tick come.
		advance(t, clk, time.Second)
	}()
	// At 0.99 s. Due from 1 s to 1.99 s; the wheel turns only at 2 s: one round.
	advance(t, clk, 1010*time.Millisecond)
	require.Eventually(t, func() bool { return w.Stats().Renewed == n }, 5*time.Second, time.Millisecond)
	require.EqualValues(t, 1, w.Stats().RoundTrips, "all renewed in one late round")

	// Over the next interval, tick by tick.
	most, rounds := 0, 0
	for range 100 { // 2.01 s to 3 s
		before := w.Stats()
		advance(t, clk, 10*time.Millisecond)
		// The round is sent by the wheel's goroutine: asleep again, it is done.
		require.Eventually(t, func() bool { return clk.Pending() > 0 }, 5*time.Second, time.Millisecond)
		after := w.Stats()
		most = max(most, int(after.Renewed-before.Renewed))
		rounds += int(after.RoundTrips - before.RoundTrips)
	}
	st := w.Stats()
	require.EqualValues(t, 2*n, st.Renewed, "each lease renewed once more: %+v", st)
	require.Zero(t, st.Lost)
	require.LessOrEqual(t, most, 2, "leases renewed in one tick after the late round")
	require.GreaterOrEqual(t, rounds, n/2, "renewals spread over the interval")
}

// TestStopFromOnLostWhileFlushing: OnLost callbacks run on the wheel's
// goroutine between the pipelines of a round; a callback that stops every
// lease (its own by Release) returns at once, and the pipelines not yet
// sent leave the stopped leases out.
func TestStopFromOnLostWhileFlushing(t *testing.T) {
	mr, rdb := redistest.Miniredis(t)
	ctx := context.Background()
	clk := NewFakeClock(epoch)
	w := New(WithClock(clk), WithBatchSize(10))
	w.pipeLeases = 10
	require.NoError(t, rdb.ScriptLoad(ctx, stringRenewer.Lua.Source()).Err())
	const n = 30
	leases := make([]*Lease, n)
	for i := range leases {
		leases[i] = hold(t, ctx, w, rdb, fmt.Sprintf("cb%d", i), 30*time.Second, true)
	}
	var mu sync.Mutex
	calls := 0
	for _, l := range leases {
		l.OnLost(LostFunc(func(error) {
			for _, o := range leases {
				o.Stop()
			}
			l.Release()
			mu.Lock()
			calls++
			mu.Unlock()
		}))
	}
	mr.FlushAll() // every key gone: the first pipeline loses its leases
	advance(t, clk, 10*time.Second)
	// The round ends, and the wheel, empty, goes idle (it waits on real
	// time then, not on the clock) and ends.
	require.Eventually(t, func() bool { return watchdogGoroutines(w) == 0 }, 5*time.Second, time.Millisecond,
		"a callback stopping leases blocked the wheel")
	st := w.Stats()
	require.EqualValues(t, 1, st.RoundTrips, "pipelines of stopped leases were sent: %+v", st)
	require.EqualValues(t, 10, st.Lost)
	require.Zero(t, st.Held)
	require.Equal(t, 10, calls)
}

// TestStalledServerHandsTheWheelOver: while the wheel's goroutine awaits
// the reply of a paused server, a lease on another server still falls due:
// a new goroutine takes the wheel over and renews it, and the stalled one
// ends with its round trip.
func TestStalledServerHandsTheWheelOver(t *testing.T) {
	srvs := redistest.StartServers(t, 2)
	slow, fast := srvs[0].Client(t), srvs[1].Client(t)
	admin := srvs[0].Client(t)
	ctx := context.Background()
	require.NoError(t, slow.ScriptLoad(ctx, stringRenewer.Lua.Source()).Err())
	require.NoError(t, fast.ScriptLoad(ctx, stringRenewer.Lua.Source()).Err())
	w := New()
	t0 := time.Now()
	a := hold(t, ctx, w, slow, "a", 3*time.Second, true) // renewed at 1 s
	defer a.Stop()
	time.Sleep(100 * time.Millisecond) // b's renewals fall between a's
	b := hold(t, ctx, w, fast, "b", 600*time.Millisecond, true)
	defer b.Stop()
	var recA, recB lostRecorder
	a.OnLost(&recA)
	b.OnLost(&recB)

	time.Sleep(time.Until(t0.Add(800 * time.Millisecond)))
	const pause = 1200 * time.Millisecond
	require.NoError(t, admin.ClientPause(ctx, pause).Err())
	paused := time.Now()
	time.Sleep(time.Until(t0.Add(1300 * time.Millisecond))) // a's renewal is stalled now
	before := w.Stats().Renewed
	most := 0
	for time.Since(paused) < pause-150*time.Millisecond {
		most = max(most, watchdogGoroutines(w))
		time.Sleep(10 * time.Millisecond)
	}
	during := w.Stats().Renewed - before
	require.Zero(t, recB.n(), "b was lost while the other server stalled")
	require.GreaterOrEqual(t, during, int64(2), "b's renewals went on while a's reply was awaited")
	require.GreaterOrEqual(t, most, 2, "a second wheel goroutine took over")
	require.EqualValues(t, 1, w.stats.handoffs.Load(), "one stalled round, one handoff")

	time.Sleep(time.Until(paused.Add(pause + 500*time.Millisecond)))
	require.Zero(t, recA.n(), "a's late reply renewed it")
	require.Zero(t, recB.n())
	require.Zero(t, w.Stats().Errors)
	require.EqualValues(t, 1, w.stats.handoffs.Load())
	waitUntil(t, "the stalled goroutine ended", func() bool { return watchdogGoroutines(w) == 1 })
}

// turnsSettle reports whether the wheel stays asleep (no turn) for 50 ms.
func turnsSettle(w *Watchdog) bool {
	before := w.stats.turns.Load()
	time.Sleep(50 * time.Millisecond)
	return w.stats.turns.Load() == before
}

// TestEventsWithinOneTick: events at different instants of one tick. The
// renewals all go in one round at the first of them; a loss check later in
// the tick waits for the next tick, asleep: the wheel does not spin until
// the tick is over (on a fake clock that would be forever).
func TestEventsWithinOneTick(t *testing.T) {
	_, rdb := redistest.Miniredis(t)
	ctx := context.Background()
	require.NoError(t, rdb.ScriptLoad(ctx, stringRenewer.Lua.Source()).Err())
	clk := NewFakeClock(epoch)
	w := New(WithClock(clk)) // ticks of 10 ms from epoch
	start := func(key string, timeout time.Duration, renew bool) *Lease {
		require.NoError(t, rdb.Set(ctx, key, "me", 0).Err())
		return w.Start(Spec{Renewer: stringRenewer, Targets: []Target{{Client: conn.Of(rdb), Keys: []string{key}, Arg: "me"}},
			Timeout: timeout, Renew: renew, Name: key, Primitive: "test"}, clk.Now())
	}
	// At 2 ms and 5 ms: renewals due at 1.002 s and 1.005 s; fixed leases
	// of 2 s end (lease minus a margin of 31 ms) at 1.971 s and 1.974 s.
	clk.Advance(2 * time.Millisecond)
	a, e := start("a", 3*time.Second, true), start("e", 2*time.Second, false)
	clk.Advance(3 * time.Millisecond)
	b, f := start("b", 3*time.Second, true), start("f", 2*time.Second, false)
	defer func() {
		for _, l := range []*Lease{a, b, e, f} {
			l.Stop()
		}
		advance(t, clk, time.Hour) // let the wheel see it is empty
	}()
	var lostE, lostF lostRecorder
	e.OnLost(&lostE)
	f.OnLost(&lostF)

	advance(t, clk, 997*time.Millisecond) // 1.002 s
	require.Eventually(t, func() bool { return w.Stats().Renewed == 2 }, 5*time.Second, time.Millisecond)
	require.EqualValues(t, 1, w.Stats().RoundTrips, "the tick's renewals in one round")
	require.Eventually(t, func() bool { return turnsSettle(w) }, 5*time.Second, time.Millisecond, "the wheel spins")

	advance(t, clk, 969*time.Millisecond) // 1.971 s: e ends, f is due later in this tick
	require.Eventually(t, func() bool { return lostE.n() == 1 }, 5*time.Second, time.Millisecond)
	require.Zero(t, lostF.n(), "f told before its time")
	require.Eventually(t, func() bool { return turnsSettle(w) }, 5*time.Second, time.Millisecond, "the wheel spins until the next tick")
	require.Zero(t, lostF.n())
	advance(t, clk, 9*time.Millisecond) // 1.980 s: the next tick
	require.Eventually(t, func() bool { return lostF.n() == 1 }, 5*time.Second, time.Millisecond, "f told at the next tick")
}

// TestHandoffBoundIgnoresRenewedRounds: a round in flight is placed at its
// loss time; once renewed it moves on, and that loss time must no longer
// bring the handoff forward, else a round that takes a tick or so would
// hand the wheel over in steady state.
func TestHandoffBoundIgnoresRenewedRounds(t *testing.T) {
	_, rdb := redistest.Miniredis(t)
	ctx := context.Background()
	require.NoError(t, rdb.ScriptLoad(ctx, stringRenewer.Lua.Source()).Err())
	clk := NewFakeClock(epoch)
	w := New(WithClock(clk))
	const n = 50
	leases := make([]*Lease, n)
	for i := range leases {
		leases[i] = hold(t, ctx, w, rdb, fmt.Sprintf("hb%d", i), 3*time.Second, true)
	}
	defer func() {
		for _, l := range leases {
			l.Stop()
		}
		advance(t, clk, time.Hour)
	}()
	for round := 1; round <= 3; round++ { // renewed at 1, 2 and 3 s
		advance(t, clk, time.Second)
		require.Eventually(t, func() bool { return w.Stats().Renewed == int64(round*n) }, 5*time.Second, time.Millisecond)
	}
	// The round of 1 s was in flight at its loss time, 3.959 s, 19 ms from
	// now; the next event is the renewal at 4 s, due halfway to its loss.
	advance(t, clk, 940*time.Millisecond)
	require.Eventually(t, func() bool { return clk.Pending() > 0 }, 5*time.Second, time.Millisecond)
	w.mu.Lock()
	due := w.dueLocked().Sub(clk.Now())
	w.mu.Unlock()
	require.Greater(t, due, 500*time.Millisecond, "the wheel would be handed over %v from now", due)
	require.Zero(t, w.stats.handoffs.Load())
}
