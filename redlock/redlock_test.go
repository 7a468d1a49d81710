package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
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
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.uber.org/goleak"

	"github.com/relock-go/relock/internal/core"
	"github.com/relock-go/relock/internal/lease"
	"github.com/relock-go/relock/internal/testkit/redistest"
	"github.com/relock-go/relock/lock"
	"github.com/relock-go/relock/redlock"
	"github.com/relock-go/relock/rwlock"
	"github.com/relock-go/relock/tracing"
	"github.com/relock-go/relock/watchdog"
)

func TestMain(m *testing.M) {
	// Killed masters make go-redis log every failed dial; the tests assert
	// on the errors themselves.
	redis.SetLogger(quietLogger{})
	code := m.Run()
	// What a Lock leaves in the background (give-backs and releases to
	// members a test killed or stalled) ends within twice the unlock
	// timeout, 5 s by default: wait that long for it, and no longer.
	deadline := time.Now().Add(11 * time.Second)
	err := goleak.Find()
	for err != nil && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
		err = goleak.Find()
	}
	if code == 0 && err != nil {
		fmt.Fprintf(os.Stderr, "goleak: goroutines outlived the tests: %v\n", err)
		code = 1
	}
	os.Exit(code)
}

type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

// ---- rig -------------------------------------------------------------------

// fast is the client configuration for masters a test kills or stalls:
// go-redis must not retry a command nor wait long on a dial, so that what
// bounds an attempt is redlock's node timeout, not the client's defaults.
func fast(o *redis.Options) {
	o.MaxRetries = -1
	o.DialTimeout = 100 * time.Millisecond
}

// masters is a set of independent redis-server masters on loopback.
type masters struct {
	srvs   []*redistest.Server
	admins []*redis.Client // for inspection and fault injection
}

func startMasters(t *testing.T, n int) *masters {
	t.Helper()
	ms := &masters{srvs: redistest.StartServers(t, n)}
	for _, s := range ms.srvs {
		ms.admins = append(ms.admins, s.Client(t, fast))
	}
	return ms
}

// process returns one client per master, as one process would have: its
// own connection pools and queue hubs.
func (ms *masters) process(t *testing.T, opts ...func(*redis.Options)) []*redis.Client {
	t.Helper()
	cs := make([]*redis.Client, len(ms.srvs))
	for i, s := range ms.srvs {
		cs[i] = s.Client(t, append([]func(*redis.Options){fast}, opts...)...)
	}
	return cs
}

// mutexes makes one *lock.Mutex named name per client.
func mutexes(cs []*redis.Client, name string) []redlock.Member {
	ms := make([]redlock.Member, len(cs))
	for i, c := range cs {
		ms[i] = lock.New(c, name)
	}
	return ms
}

// exists returns EXISTS key on master i.
func (ms *masters) exists(t *testing.T, i int, key string) int64 {
	t.Helper()
	n, err := ms.admins[i].Exists(context.Background(), key).Result()
	require.NoError(t, err, "EXISTS on master %d", i)
	return n
}

// existsOn returns EXISTS key on every master listed.
func (ms *masters) existsOn(t *testing.T, key string, idx ...int) []int64 {
	t.Helper()
	out := make([]int64, len(idx))
	for j, i := range idx {
		out[j] = ms.exists(t, i, key)
	}
	return out
}

func (ms *masters) all() []int {
	idx := make([]int, len(ms.srvs))
	for i := range idx {
		idx[i] = i
	}
	return idx
}

// pause stalls master i: for d it answers no command (CLIENT PAUSE ALL),
// as a stopped process or a partition would, then runs what it queued.
func (ms *masters) pause(t *testing.T, i int, d time.Duration) {
	t.Helper()
	require.NoError(t, ms.admins[i].Do(context.Background(), "CLIENT", "PAUSE", d.Milliseconds(), "ALL").Err())
}

func ones(n int) []int64 { return slices.Repeat([]int64{1}, n) }

func zeros(n int) []int64 { return make([]int64, n) }

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// nodeErrors collects every *redlock.NodeError in err's tree (errors.As
// only finds the first).
func nodeErrors(err error) []*redlock.NodeError {
	var out []*redlock.NodeError
	var walk func(error)
	walk = func(e error) {
		if e == nil {
			return
		}
		if ne, ok := e.(*redlock.NodeError); ok {
			out = append(out, ne)
			return
		}
		switch u := e.(type) {
		case interface{ Unwrap() []error }:
			for _, x := range u.Unwrap() {
				walk(x)
			}
		case interface{ Unwrap() error }:
			walk(u.Unwrap())
		}
	}
	walk(err)
	slices.SortFunc(out, func(a, b *redlock.NodeError) int { return a.Index - b.Index })
	return out
}

func indexes(nes []*redlock.NodeError) []int {
	out := make([]int, len(nes))
	for i, ne := range nes {
		out[i] = ne.Index
	}
	return out
}

// waitDone waits (boundedly) for a hold's context to end and returns how
// long that took.
func waitDone(t *testing.T, ctx context.Context, bound time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	select {
	case <-ctx.Done():
		return time.Since(start)
	case <-time.After(bound):
		t.Fatalf("hold context not done within %v", bound)
		return 0
	}
}

func attrs(kvs []attribute.KeyValue) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range kvs {
		m[kv.Key] = kv.Value
	}
	return m
}

// memberEvents returns, per member index, the outcome of the span's
// "member" events.
func memberEvents(s sdktrace.ReadOnlySpan) map[int64]string {
	out := map[int64]string{}
	for _, ev := range s.Events() {
		if ev.Name != "member" {
			continue
		}
		a := attrs(ev.Attributes)
		out[a["index"].AsInt64()] = a["outcome"].AsString()
	}
	return out
}

// ---- acquisition on 5 masters ------------------------------------------------

func TestAcquireAllUpCompetingOwnerRefused(t *testing.T) {
	ctx := ctxT(t)
	ms := startMasters(t, 5)
	rl := redlock.New(mutexes(ms.process(t), "res"))
	require.Equal(t, 3, rl.Quorum())
	require.Equal(t, "res (5 members)", rl.Name())

	held, err := rl.Lock(ctx)
	require.NoError(t, err)
	require.NoError(t, held.Err())
	require.Equal(t, ones(5), ms.existsOn(t, "res", ms.all()...), "the key is on every master")
	// One owner across all masters, one count each.
	var field string
	for i := range 5 {
		h, err := ms.admins[i].HGetAll(ctx, "res").Result()
		require.NoError(t, err)
		require.Len(t, h, 1)
		for f, v := range h {
			require.Equal(t, "1", v)
			if field == "" {
				field = f
			}
			require.Equal(t, field, f, "master %d holds another owner", i)
		}
		ttl, err := ms.admins[i].PTTL(ctx, "res").Result()
		require.NoError(t, err)
		require.Greater(t, ttl, 20*time.Second, "default lease 30 s")
	}
	tok, ok := lock.FencingToken(held)
	require.True(t, ok)
	require.Positive(t, tok)

	// Another process (its own clients), another owner: refused on every
	// member, each member's outcome readable from the error.
	other := redlock.New(mutexes(ms.process(t), "res"))
	_, err = other.TryLock(ctx)
	require.ErrorIs(t, err, redlock.ErrNotAcquired)
	require.ErrorContains(t, err, "trylock")
	require.ErrorContains(t, err, "won 0 of 5 members, quorum 3")
	var first *redlock.NodeError
	require.True(t, errors.As(err, &first))
	require.Equal(t, redlock.OutcomeHeld, first.Outcome)
	nes := nodeErrors(err)
	require.Len(t, nes, 5)
	for i, ne := range nes {
		require.Equal(t, i, ne.Index)
		require.Equal(t, redlock.OutcomeHeld, ne.Outcome)
		require.Equal(t, ms.srvs[i].Addr+" res", ne.Node)
		require.NoError(t, ne.Err)
		require.ErrorIs(t, ne, redlock.ErrNotAcquired)
	}
	// The same *Lock with another context is another owner too; and a
	// bounded Lock gives up with ErrNotAcquired.
	_, err = rl.TryLock(context.Background())
	require.ErrorIs(t, err, redlock.ErrNotAcquired)
	start := time.Now()
	_, err = redlock.New(mutexes(ms.process(t), "res"), redlock.WithWaitTimeout(300*time.Millisecond)).Lock(ctx)
	require.ErrorIs(t, err, redlock.ErrNotAcquired)
	require.Less(t, time.Since(start), 5*time.Second)
	// The refusals left the holder alone.
	require.Equal(t, ones(5), ms.existsOn(t, "res", ms.all()...))
	require.NoError(t, held.Err())

	require.NoError(t, rl.Unlock(held))
	require.ErrorIs(t, context.Cause(held), context.Canceled)
	require.NoError(t, rl.Drain(ctx))
	require.Equal(t, zeros(5), ms.existsOn(t, "res", ms.all()...))
	require.ErrorIs(t, rl.Unlock(held), redlock.ErrNotHeld, "double unlock")
	require.ErrorIs(t, rl.Unlock(context.Background()), redlock.ErrNotHeld, "never held")

	// Now the competitor gets it, with the next token.
	h2, err := other.TryLock(ctx)
	require.NoError(t, err)
	tok2, _ := lock.FencingToken(h2)
	require.Greater(t, tok2, tok)
	require.NoError(t, other.Unlock(h2))
}

func TestReentrantAndScopedHold(t *testing.T) {
	ctx := ctxT(t)
	ms := startMasters(t, 5)
	rl := redlock.New(mutexes(ms.process(t), "re"))
	outer, err := rl.Lock(ctx)
	require.NoError(t, err)
	inner, err := rl.Lock(outer) // same owner: re-enters on every master
	require.NoError(t, err)
	for i := range 5 {
		vals, err := ms.admins[i].HVals(ctx, "re").Result()
		require.NoError(t, err)
		require.Equal(t, []string{"2"}, vals, "master %d", i)
	}
	require.NoError(t, rl.Unlock(inner))
	require.NoError(t, outer.Err(), "an inner unlock leaves the outer hold")
	require.Equal(t, ones(5), ms.existsOn(t, "re", ms.all()...))
	require.NoError(t, rl.Unlock(outer))
	require.NoError(t, rl.Drain(ctx))
	require.Equal(t, zeros(5), ms.existsOn(t, "re", ms.all()...))

	// With WithHoldScopedToContext the acquiring context scopes the hold:
	// when it ends, the hold is released in the background and a later
	// Unlock returns nil.
	rl = redlock.New(mutexes(ms.process(t), "re"), redlock.WithHoldScopedToContext())
	scope, cancel := context.WithCancel(ctx)
	held, err := rl.Lock(scope)
	require.NoError(t, err)
	cancel()
	waitDone(t, held, 5*time.Second)
	require.Eventually(t, func() bool {
		return slices.Equal(zeros(5), ms.existsOn(t, "re", ms.all()...))
	}, 5*time.Second, 10*time.Millisecond)
	require.NoError(t, rl.Unlock(held))
	require.NoError(t, rl.Drain(ctx))
}

// By default the acquiring context bounds the wait only; a member locked
// through the Redlock's hold re-enters on it, and a hold of another lock
// lends nothing.
func TestWaitOnlyAndPerLockReentry(t *testing.T) {
	ctx := ctxT(t)
	ms := startMasters(t, 3)
	cs := ms.process(t)
	rl := redlock.New(mutexes(cs, "wo"))
	wait, cancel := context.WithTimeout(ctx, 150*time.Millisecond)
	held, err := rl.Lock(wait)
	require.NoError(t, err)
	<-wait.Done()
	cancel()
	time.Sleep(100 * time.Millisecond)
	require.NoError(t, held.Err(), "the hold outlives the wait's deadline")
	require.Equal(t, ones(3), ms.existsOn(t, "wo", ms.all()...))

	// A member, through the Redlock's hold: a re-entry (count 2).
	m0 := lock.New(cs[0], "wo")
	in, err := m0.TryLock(held)
	require.NoError(t, err)
	n, err := m0.HoldCount(in)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	require.NoError(t, m0.Unlock(in))
	require.ErrorIs(t, m0.Unlock(held), lock.ErrNotHeld, "a member cannot end the Redlock's hold")
	require.NoError(t, held.Err())

	// Another Redlock's hold lends nothing: a fresh owner, refused.
	other := redlock.New(mutexes(cs, "wo:other"))
	oh, err := other.Lock(ctx)
	require.NoError(t, err)
	_, err = rl.TryLock(oh)
	require.ErrorIs(t, err, redlock.ErrNotAcquired)
	require.NoError(t, other.Unlock(oh))
	require.NoError(t, rl.Unlock(held))
	require.NoError(t, rl.Drain(ctx))
	require.NoError(t, other.Drain(ctx))
	require.Equal(t, zeros(3), ms.existsOn(t, "wo", ms.all()...))
}

func TestWaitBounds(t *testing.T) {
	ctx := ctxT(t)
	ms := startMasters(t, 5)
	holder := redlock.New(mutexes(ms.process(t), "wait"))
	held, err := holder.Lock(ctx)
	require.NoError(t, err)

	// WithWaitTimeout bounds the wait: ErrNotAcquired with the last
	// attempt's member outcomes.
	const wait = 300 * time.Millisecond
	waiter := redlock.New(mutexes(ms.process(t), "wait"), redlock.WithWaitTimeout(wait), redlock.WithNodeTimeout(50*time.Millisecond))
	start := time.Now()
	_, err = waiter.Lock(ctx)
	require.ErrorIs(t, err, redlock.ErrNotAcquired)
	require.GreaterOrEqual(t, time.Since(start), wait)
	require.Less(t, time.Since(start), 5*time.Second)
	// Every member that answered by the decision (three refusals put the
	// quorum out of reach) or within its grace after it; on a loaded
	// machine the fifth may be past its grace.
	require.GreaterOrEqual(t, len(nodeErrors(err)), 3)
	require.LessOrEqual(t, len(nodeErrors(err)), 5)

	// A context deadline bounds it too, and says so.
	dctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	_, err = redlock.New(mutexes(ms.process(t), "wait"), redlock.WithNodeTimeout(50*time.Millisecond)).Lock(dctx)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.NoError(t, holder.Unlock(held))
	require.NoError(t, holder.Drain(ctx)) // every member free, not only a quorum

	// The wait bound does not bound the hold.
	held, err = waiter.Lock(ctx)
	require.NoError(t, err)
	time.Sleep(2 * wait)
	require.NoError(t, held.Err(), "the hold outlives the wait bound")
	require.Equal(t, ones(5), ms.existsOn(t, "wait", ms.all()...))
	require.NoError(t, waiter.Unlock(held))
}

func TestTwoKilledStillAcquiresQuickly(t *testing.T) {
	ctx := ctxT(t)
	ms := startMasters(t, 5)
	cs := ms.process(t)
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	ms.srvs[1].Vanish(t)
	ms.srvs[3].Vanish(t)
	live := []int{0, 2, 4}

	// Default node timeout (250 ms). A killed master refuses the
	// connection, and the three live ones decide the round, so the
	// acquire is much quicker than that.
	rl := redlock.New(mutexes(cs, "k2"), redlock.WithTracerProvider(tp), redlock.WithUnlockTimeout(500*time.Millisecond))
	start := time.Now()
	held, err := rl.Lock(ctx)
	took := time.Since(start)
	require.NoError(t, err)
	t.Logf("2 of 5 killed, default node timeout (%v): acquired in %v", redlock.DefaultNodeTimeout, took)
	require.Less(t, took, 2*time.Second, "not bound by the clients' own timeouts")
	require.Equal(t, ones(3), ms.existsOn(t, "k2", live...))
	spans := rec.Ended()
	require.Len(t, spans, 1)
	a := attrs(spans[0].Attributes())
	require.EqualValues(t, 3, a[tracing.NodesWon].AsInt64())
	ev := memberEvents(spans[0])
	require.Len(t, ev, 5)
	for _, i := range live {
		require.Equal(t, redlock.OutcomeAcquired, ev[int64(i)])
	}
	for _, i := range []int64{1, 3} {
		require.Contains(t, []string{redlock.OutcomeError, redlock.OutcomeTimeout, redlock.OutcomePending}, ev[i], "member %d", i)
	}
	// A competing owner is refused by the 3 live masters and cannot reach
	// the 2 dead ones: the error has every member's outcome.
	_, err = redlock.New(mutexes(ms.process(t), "k2"), redlock.WithNodeTimeout(200*time.Millisecond),
		redlock.WithUnlockTimeout(200*time.Millisecond)).TryLock(ctx)
	require.ErrorIs(t, err, redlock.ErrNotAcquired)
	nes := nodeErrors(err)
	require.Equal(t, []int{0, 1, 2, 3, 4}, indexes(nes))
	for _, ne := range nes {
		if slices.Contains(live, ne.Index) {
			require.Equal(t, redlock.OutcomeHeld, ne.Outcome)
		} else {
			require.Contains(t, []string{redlock.OutcomeError, redlock.OutcomeTimeout, redlock.OutcomePending}, ne.Outcome)
		}
	}
	require.Equal(t, ones(3), ms.existsOn(t, "k2", live...), "the holder is untouched")

	start = time.Now()
	require.NoError(t, rl.Unlock(held), "a quorum released")
	t.Logf("unlock with 2 of 5 killed took %v (unlock timeout 500ms)", time.Since(start))
	require.NoError(t, rl.Drain(ctx))
	require.Equal(t, zeros(3), ms.existsOn(t, "k2", live...))

	// A short node timeout: about that.
	rl = redlock.New(mutexes(cs, "k2"), redlock.WithNodeTimeout(100*time.Millisecond), redlock.WithUnlockTimeout(500*time.Millisecond))
	start = time.Now()
	held, err = rl.Lock(ctx)
	took = time.Since(start)
	require.NoError(t, err)
	t.Logf("2 of 5 killed, node timeout 100ms: acquired in %v", took)
	require.Less(t, took, time.Second)
	require.NoError(t, rl.Unlock(held))
}

// TestStalledNodeCostsAboutNodeTimeout: two masters answer nothing for
// 1.5 s (CLIENT PAUSE ALL, as a stopped process would); with a 100 ms
// node timeout the acquire must not wait for them (the three others
// decide it at once), and what the attempts left behind take once the
// masters answer again is given back.
//
// Regression test: the node timeout is a context deadline, and a go-redis
// client ignores context deadlines on socket reads unless
// ContextTimeoutEnabled is set, so tryAll used to wait for the stalled
// replies (1.5 s here) on clients with default options.
func TestStalledNodeCostsAboutNodeTimeout(t *testing.T) {
	stalledAcquire(t, nil)
}

// TestStalledNodeWithContextTimeoutClient is the same on clients that let
// the context deadline reach the socket: the acquire takes about the node
// timeout, and the stalled members are reported as not won.
func TestStalledNodeWithContextTimeoutClient(t *testing.T) {
	stalledAcquire(t, func(o *redis.Options) { o.ContextTimeoutEnabled = true })
}

func stalledAcquire(t *testing.T, opt func(*redis.Options)) {
	ctx := ctxT(t)
	ms := startMasters(t, 5)
	var cs []*redis.Client
	if opt != nil {
		cs = ms.process(t, opt)
	} else {
		cs = ms.process(t)
	}
	// Open a connection to every master first, so that the stall hits a
	// command, not a dial.
	for _, c := range cs {
		require.NoError(t, c.Ping(ctx).Err())
	}
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	rl := redlock.New(mutexes(cs, "stall"), redlock.WithNodeTimeout(100*time.Millisecond),
		redlock.WithUnlockTimeout(3*time.Second), redlock.WithTracerProvider(tp))

	const stall = 1500 * time.Millisecond
	ms.pause(t, 0, stall)
	ms.pause(t, 1, stall)
	start := time.Now()
	held, err := rl.TryLock(ctx)
	took := time.Since(start)
	t.Logf("2 of 5 stalled for %v, node timeout 100ms: TryLock took %v (err %v)", stall, took, err)
	require.NoError(t, err)
	require.Less(t, took, 700*time.Millisecond, "the acquire waited for the stalled masters instead of timing out after ~100ms")
	ev := memberEvents(rec.Ended()[0])
	t.Logf("member outcomes: %v", ev)
	for _, i := range []int64{0, 1} {
		require.Contains(t, []string{redlock.OutcomeTimeout, redlock.OutcomeError, redlock.OutcomePending}, ev[i], "stalled member %d", i)
	}
	for _, i := range []int64{2, 3, 4} {
		require.Equal(t, redlock.OutcomeAcquired, ev[i])
	}
	require.NoError(t, rl.Unlock(held))
	require.NoError(t, rl.Drain(ctx))
	require.Equal(t, zeros(5), ms.existsOn(t, "stall", ms.all()...), "the stalled members' late grants were given back")
}

// TestStalledNodeReportedAsTimeout: three masters stall longer than the
// clients' own ReadTimeout (200ms) but not the node timeout (2 s); the
// attempt fails and each stalled member must be reported as
// OutcomeTimeout. Regression test: go-redis's "i/o timeout" (a net.Error
// whose Timeout() is true) is neither context.DeadlineExceeded nor
// accompanied by an expired node context, and was filed under
// OutcomeError. (With ContextTimeoutEnabled clients the same happened at
// random, when the socket deadline fired a hair before the context's.)
func TestStalledNodeReportedAsTimeout(t *testing.T) {
	ctx := ctxT(t)
	ms := startMasters(t, 5)
	cs := ms.process(t, func(o *redis.Options) { o.ReadTimeout = 200 * time.Millisecond })
	for _, c := range cs {
		require.NoError(t, c.Ping(ctx).Err())
	}
	rl := redlock.New(mutexes(cs, "slow"), redlock.WithNodeTimeout(2*time.Second))
	for _, i := range []int{0, 1, 2} {
		ms.pause(t, i, time.Second)
	}
	_, err := rl.TryLock(ctx)
	t.Logf("TryLock: %v", err)
	require.ErrorIs(t, err, redlock.ErrNotAcquired)
	nes := nodeErrors(err)
	require.Equal(t, []int{0, 1, 2}, indexes(nes))
	for _, ne := range nes {
		require.Error(t, ne.Err)
		assert.Equal(t, redlock.OutcomeTimeout, ne.Outcome, "member %d: %v", ne.Index, ne)
	}
	require.NoError(t, rl.Drain(ctx))
	require.Equal(t, zeros(5), ms.existsOn(t, "slow", ms.all()...), "nothing left held")
}

// lateMember is a member whose every attempt answers "acquired" exactly
// when the node timeout ends, as a stalled master's late reply does. It
// counts what it holds, so a release behind the hold's back shows.
type lateMember struct {
	memberHook
	client redis.UniversalClient // never dialled: its workers run the calls
	mu     sync.Mutex
	held   int
}

func (f *lateMember) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.held
}

// memberHook is embedded under this name, as the primitives embed it.
type memberHook = core.MemberHook

func (f *lateMember) Name() string { return "late" }

func (f *lateMember) node() (core.Member, error) {
	return core.Member{
		Name: "late", Kind: "lock", Addr: "fake:0", Client: core.ClientOf(f.client),
		Try: func(ctx context.Context, _ string, _ time.Duration) (bool, int64, time.Duration, error) {
			<-ctx.Done()
			f.mu.Lock()
			f.held++
			f.mu.Unlock()
			return true, 1, 0, nil
		},
		Release: func(context.Context, string, time.Duration) (bool, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			if f.held == 0 {
				return false, nil
			}
			f.held--
			return true, nil
		},
		// A fixed lease is never renewed, so the target is never sent.
		Renewal: func(string) lease.Target { return lease.Target{Keys: []string{"late"}} },
	}, nil
}

// TestLateAnswerCountedIsKept: a member whose reply arrives just as the
// node timeout ends is either counted as won (and stays held) or counted
// as timed out (and its late grant is given back) — never both.
//
// It FAILS, rarely, on the tryAll of 748fae4: when the timeout and the
// reply race, tryAll marks the attempt abandoned, then still takes the
// reply ("answered just in time"), while the attempt's goroutine, seeing
// "abandoned" after its send, releases the member: the lock is reported
// held on a member that was given back, so another owner can take that
// member (for a multi-lock: the resource) meanwhile. The window is
// nanoseconds wide, so the default 300 attempts rarely catch it; runs of
// RELOCK_LATE_ATTEMPTS=20000 caught it in 2 of 7 tries here (2 members
// released behind the hold each time), and never with the fix.
var lateAttempts = func() int {
	if n, err := strconv.Atoi(os.Getenv("RELOCK_LATE_ATTEMPTS")); err == nil && n > 0 {
		return n
	}
	return 300
}()

func TestLateAnswerCountedIsKept(t *testing.T) {
	ctx := ctxT(t)
	f := &lateMember{client: redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})}
	t.Cleanup(func() { _ = f.client.Close() })
	f.memberHook = f.node
	rl := redlock.NewMulti([]redlock.Member{f}, redlock.WithNodeTimeout(time.Millisecond),
		redlock.WithLeaseTime(time.Minute), redlock.WithWatchdog(watchdog.New()))
	won, lost, released := 0, 0, 0
	for range lateAttempts {
		held, err := rl.TryLock(ctx)
		if err != nil {
			require.ErrorIs(t, err, redlock.ErrNotAcquired)
			lost++
			require.Eventually(t, func() bool { return f.count() == 0 }, 5*time.Second, time.Millisecond,
				"a late grant must be given back")
			continue
		}
		won++
		time.Sleep(200 * time.Microsecond) // let an abandoned attempt act
		if f.count() != 1 {
			released++
		}
		if err := rl.Unlock(held); err != nil {
			// Unlock waits for its member up to the node timeout, 1 ms
			// here: a release still on its way then finishes in the
			// background, which Drain waits for.
			require.ErrorContains(t, err, "no reply within the node timeout")
			require.NoError(t, rl.Drain(ctx))
		}
		f.mu.Lock()
		f.held = 0
		f.mu.Unlock()
	}
	t.Logf("%d attempts: %d counted as won, %d as timed out; %d of the won given back behind the hold", lateAttempts, won, lost, released)
	require.Zero(t, released, "a member counted as won was released by the abandoned attempt")
}

func TestThreeKilledFailsCleanly(t *testing.T) {
	ctx := ctxT(t)
	ms := startMasters(t, 5)
	cs := ms.process(t)
	for _, i := range []int{0, 2, 4} {
		ms.srvs[i].Vanish(t)
	}
	live := []int{1, 3}
	rl := redlock.New(mutexes(cs, "k3"), redlock.WithNodeTimeout(500*time.Millisecond),
		redlock.WithWaitTimeout(2*time.Second), redlock.WithUnlockTimeout(500*time.Millisecond))

	start := time.Now()
	_, err := rl.TryLock(ctx)
	t.Logf("3 of 5 killed, node timeout 500ms: TryLock failed in %v: %v", time.Since(start), err)
	require.Less(t, time.Since(start), 5*time.Second)
	require.ErrorIs(t, err, redlock.ErrNotAcquired)
	// The round is decided once three members failed: a live member whose
	// reply comes after the grace is reported pending, and given back.
	require.Regexp(t, `won [12] of 5 members, quorum 3`, err.Error())
	nes := nodeErrors(err)
	require.Subset(t, indexes(nes), []int{0, 2, 4}, "a reason for each dead member")
	won := 1
	if strings.Contains(err.Error(), "won 2 of 5") {
		won = 2
	}
	require.Len(t, nes, 5-won, "one reason per member not won")
	for _, ne := range nes {
		if ne.Outcome == redlock.OutcomePending {
			require.Contains(t, live, ne.Index, "only a live member is still pending")
			continue
		}
		require.Contains(t, []string{redlock.OutcomeError, redlock.OutcomeTimeout}, ne.Outcome)
		require.Error(t, ne.Err, "the cause is kept")
		require.Contains(t, ne.Node, ms.srvs[ne.Index].Addr)
		require.NotErrorIs(t, ne, redlock.ErrNotAcquired, "a dead node is not contention")
	}
	require.NoError(t, rl.Drain(ctx))
	require.Equal(t, zeros(2), ms.existsOn(t, "k3", live...), "the members won were given back")

	// Lock retries until its wait bound, then fails the same way.
	start = time.Now()
	_, err = rl.Lock(ctx)
	t.Logf("3 of 5 killed: Lock (wait 2s) failed in %v", time.Since(start))
	require.Less(t, time.Since(start), 8*time.Second)
	require.ErrorIs(t, err, redlock.ErrNotAcquired)
	// The wait bound may cut the last attempt short, so a live member may
	// be reported too (as a timeout); the dead ones always are.
	nes = nodeErrors(err)
	require.Subset(t, indexes(nes), []int{0, 2, 4})
	for _, ne := range nes {
		require.Contains(t, []string{redlock.OutcomeError, redlock.OutcomeTimeout}, ne.Outcome)
	}
	// Once the wait is over the last round's members are given back in
	// the background (the caller is not held for it): soon, not at once.
	require.Eventually(t, func() bool { return slices.Equal(zeros(2), ms.existsOn(t, "k3", live...)) },
		5*time.Second, 10*time.Millisecond, "the members won were given back")
	// The give-backs to the dead members end by themselves too (each is
	// bounded by the node timeout), before goleak looks at the end.
	require.Eventually(t, func() bool {
		buf := make([]byte, 1<<20)
		return !strings.Contains(string(buf[:runtime.Stack(buf, true)]), "giveBack")
	}, 10*time.Second, 20*time.Millisecond, "the background give-back ended")
}

// TestValidityTimeRespected: three masters stall longer than the lease, so
// the quorum is won only after the lease has run out; the acquire fails
// and gives every member back.
func TestValidityTimeRespected(t *testing.T) {
	ctx := ctxT(t)
	ms := startMasters(t, 5)
	cs := ms.process(t)
	for _, c := range cs {
		require.NoError(t, c.Ping(ctx).Err())
	}
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	const lease = 200 * time.Millisecond
	rl := redlock.New(mutexes(cs, "valid"), redlock.WithLeaseTime(lease),
		redlock.WithNodeTimeout(2*time.Second), redlock.WithTracerProvider(tp))

	const stall = 500 * time.Millisecond
	for _, i := range []int{0, 1, 2} {
		ms.pause(t, i, stall)
	}
	start := time.Now()
	_, err := rl.TryLock(ctx)
	took := time.Since(start)
	t.Logf("quorum only through masters stalled %v, lease %v: TryLock took %v: %v", stall, lease, took, err)
	require.Greater(t, took, lease)
	require.ErrorIs(t, err, redlock.ErrNotAcquired)
	require.ErrorContains(t, err, "validity time used up")
	require.Empty(t, nodeErrors(err), "every member answered: none failed, the time did")
	require.NoError(t, rl.Drain(ctx))
	require.Equal(t, zeros(5), ms.existsOn(t, "valid", ms.all()...), "nothing left held")

	a := attrs(rec.Ended()[0].Attributes())
	require.EqualValues(t, 5, a[tracing.NodesWon].AsInt64())
	require.Negative(t, a[tracing.ValidityMillis].AsInt64())
	require.Equal(t, tracing.OutcomeNotAcquired, a[tracing.Outcome].AsString())

	// Nothing is held: another owner gets it at once.
	other := redlock.New(mutexes(ms.process(t), "valid"), redlock.WithLeaseTime(time.Second))
	h, err := other.TryLock(ctx)
	require.NoError(t, err)
	require.NoError(t, other.Unlock(h))
}

// ---- renewal and loss -----------------------------------------------------

// renewLease is the watchdog lease of the renewal tests. It is short so
// that several leases pass quickly, but not shorter: with 300ms the hold
// was lost in 5 of 40 runs with both cores saturated, because one
// parallel round to 5 masters then occasionally takes 190-270ms, and a
// lease is renewed at 1/3 and lost at lease - margin (no bug: the
// watchdog did what it promises; the machine was too slow for the lease).
const renewLease = time.Second

func TestRenewalThroughSeveralLeases(t *testing.T) {
	for _, tc := range []struct {
		name    string
		key     string
		members func(cs []*redis.Client) []redlock.Member
	}{
		{"mutex", "renew", func(cs []*redis.Client) []redlock.Member { return mutexes(cs, "renew") }},
		{"rwlock-write", "rwrenew", func(cs []*redis.Client) []redlock.Member {
			out := make([]redlock.Member, len(cs))
			for i, c := range cs {
				out[i] = rwlock.New(c, "rwrenew").WriteLocker()
			}
			return out
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := ctxT(t)
			ms := startMasters(t, 5)
			const lease = renewLease
			rl := redlock.New(tc.members(ms.process(t)), redlock.WithWatchdogTimeout(lease))
			held, err := rl.Lock(ctx)
			require.NoError(t, err)
			deadline := time.Now().Add(3 * lease) // about 9 renewals
			for time.Now().Before(deadline) {
				time.Sleep(50 * time.Millisecond)
				require.NoError(t, held.Err(), "hold ended: %v", context.Cause(held))
			}
			require.Equal(t, ones(5), ms.existsOn(t, tc.key, ms.all()...), "renewed on every master")
			for i := range 5 {
				ttl, err := ms.admins[i].PTTL(ctx, tc.key).Result()
				require.NoError(t, err)
				require.Positive(t, ttl)
				require.LessOrEqual(t, ttl, lease)
			}
			_, err = redlock.New(tc.members(ms.process(t))).TryLock(ctx)
			require.ErrorIs(t, err, redlock.ErrNotAcquired, "still excludes others")
			require.NoError(t, rl.Unlock(held))
			require.NoError(t, rl.Drain(ctx))
			require.Equal(t, zeros(5), ms.existsOn(t, tc.key, ms.all()...))
		})
	}
}

// TestQuorumLossReportedThroughContext: three of five masters lose the
// lock while it is held; the holder's context ends with ErrLockLost within
// about a lease, Unlock reports the loss, and the surviving members are
// given back at once.
func TestQuorumLossReportedThroughContext(t *testing.T) {
	for _, tc := range []struct {
		name string
		hurt func(t *testing.T, ms *masters, i int)
	}{
		{"flushall", func(t *testing.T, ms *masters, i int) {
			require.NoError(t, ms.admins[i].FlushAll(context.Background()).Err())
		}},
		{"kill", func(t *testing.T, ms *masters, i int) { ms.srvs[i].Vanish(t) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := ctxT(t)
			ms := startMasters(t, 5)
			const lease = renewLease
			rl := redlock.New(mutexes(ms.process(t), "lost"), redlock.WithWatchdogTimeout(lease),
				redlock.WithUnlockTimeout(500*time.Millisecond))
			held, err := rl.Lock(ctx)
			require.NoError(t, err)
			time.Sleep(lease) // renewed at least once
			require.NoError(t, held.Err())

			// Losing two is within the quorum's margin.
			tc.hurt(t, ms, 0)
			tc.hurt(t, ms, 1)
			time.Sleep(2 * lease)
			require.NoError(t, held.Err(), "3 of 5 still renew")
			tc.hurt(t, ms, 2)
			took := waitDone(t, held, 20*lease)
			t.Logf("%s: third master lost, hold context done after %v (lease %v): %v", tc.name, took, lease, context.Cause(held))
			require.Less(t, took, 3*lease, "about a lease")
			require.ErrorIs(t, context.Cause(held), redlock.ErrLockLost)

			err = rl.Unlock(held)
			require.ErrorIs(t, err, redlock.ErrLockLost)
			require.ErrorContains(t, err, "unlock")
			// The surviving members were given back as soon as the loss
			// was known, not left to their lease.
			require.NoError(t, rl.Drain(ctx))
			require.Equal(t, zeros(2), ms.existsOn(t, "lost", 3, 4))
		})
	}
}

// TestRenewalSurvivesOneStalledMaster: one master of five answers nothing
// for twice the lease while the Redlock is held; four still renew, a
// quorum, so the hold must go on.
//
// Regression test: a renewal round used to be decided only when every
// target had answered, and its timeout is a context deadline that a
// client with go-redis's default options ignores on reads, so the stalled
// master held the round past the loss instant and the hold was declared
// lost although 4 of 5 renewed (and the 4 keys stayed behind).
func TestRenewalSurvivesOneStalledMaster(t *testing.T) {
	stalledRenewal(t, nil)
}

// TestRenewalSurvivesOneStalledMasterWithContextTimeoutClient: the same on
// clients that let the round's deadline reach the socket: it passes.
func TestRenewalSurvivesOneStalledMasterWithContextTimeoutClient(t *testing.T) {
	stalledRenewal(t, func(o *redis.Options) { o.ContextTimeoutEnabled = true })
}

func stalledRenewal(t *testing.T, opt func(*redis.Options)) {
	ctx := ctxT(t)
	ms := startMasters(t, 5)
	var cs []*redis.Client
	if opt != nil {
		cs = ms.process(t, opt)
	} else {
		cs = ms.process(t)
	}
	const lease = renewLease
	rl := redlock.New(mutexes(cs, "stalled"), redlock.WithWatchdogTimeout(lease), redlock.WithUnlockTimeout(3*lease))
	held, err := rl.Lock(ctx)
	require.NoError(t, err)
	ms.pause(t, 0, 2*lease)
	deadline := time.Now().Add(2*lease + lease/2)
	for time.Now().Before(deadline) && held.Err() == nil {
		time.Sleep(20 * time.Millisecond)
	}
	lost := context.Cause(held)
	t.Logf("one of 5 masters stalled for %v, lease %v: hold ended: %v; key on the 4 others: %v",
		2*lease, lease, lost, ms.existsOn(t, "stalled", 1, 2, 3, 4))
	err = rl.Unlock(held)
	require.NoError(t, lost, "4 of 5 renewed, a quorum, yet the hold was declared lost")
	require.NoError(t, err)
	require.NoError(t, rl.Drain(ctx))
	require.Equal(t, zeros(4), ms.existsOn(t, "stalled", 1, 2, 3, 4))
}

// ---- unlock with a member down ----------------------------------------------

func TestUnlockWithMemberDown(t *testing.T) {
	t.Run("redlock", func(t *testing.T) {
		ctx := ctxT(t)
		ms := startMasters(t, 5)
		rl := redlock.New(mutexes(ms.process(t), "down"), redlock.WithUnlockTimeout(500*time.Millisecond))
		held, err := rl.Lock(ctx)
		require.NoError(t, err)
		ms.srvs[2].Vanish(t)
		ms.srvs[4].Vanish(t)
		start := time.Now()
		require.NoError(t, rl.Unlock(held), "3 of 5 released: a quorum")
		t.Logf("redlock unlock with 2 of 5 down: %v", time.Since(start))
		require.Less(t, time.Since(start), 5*time.Second)
		require.NoError(t, rl.Drain(ctx))
		require.Equal(t, zeros(3), ms.existsOn(t, "down", 0, 1, 3))
		require.ErrorIs(t, context.Cause(held), context.Canceled)
	})
	t.Run("redlock-no-quorum", func(t *testing.T) {
		ctx := ctxT(t)
		ms := startMasters(t, 5)
		rl := redlock.New(mutexes(ms.process(t), "down"), redlock.WithUnlockTimeout(500*time.Millisecond))
		held, err := rl.Lock(ctx)
		require.NoError(t, err)
		for _, i := range []int{0, 2, 4} {
			ms.srvs[i].Vanish(t)
		}
		err = rl.Unlock(held)
		require.Error(t, err)
		require.ErrorContains(t, err, "released 2 of 5 members, quorum 3")
		require.Equal(t, []int{0, 2, 4}, indexes(nodeErrors(err)), "names the failed members")
		require.NoError(t, rl.Drain(ctx))
		require.Equal(t, zeros(2), ms.existsOn(t, "down", 1, 3), "the others were released all the same")
	})
	t.Run("multilock", func(t *testing.T) {
		ctx := ctxT(t)
		ms := startMasters(t, 3)
		cs := ms.process(t)
		ml := redlock.NewMulti([]redlock.Member{lock.New(cs[0], "a"), lock.New(cs[1], "b"), lock.New(cs[2], "c")},
			redlock.WithUnlockTimeout(500*time.Millisecond))
		held, err := ml.Lock(ctx)
		require.NoError(t, err)
		ms.srvs[1].Vanish(t)
		err = ml.Unlock(held)
		require.Error(t, err, "a multi-lock needs every member released")
		require.ErrorContains(t, err, "released 2 of 3 members, quorum 3")
		nes := nodeErrors(err)
		require.Len(t, nes, 1)
		require.Equal(t, 1, nes[0].Index)
		require.Equal(t, ms.srvs[1].Addr+" b", nes[0].Node)
		require.ErrorContains(t, err, ms.srvs[1].Addr)
		require.Equal(t, []int64{0}, ms.existsOn(t, "a", 0))
		require.Equal(t, []int64{0}, ms.existsOn(t, "c", 2))
	})
}

// ---- multi-lock -------------------------------------------------------------

func TestMultiOneMemberHeldElsewhere(t *testing.T) {
	ctx := ctxT(t)
	ms := startMasters(t, 3)
	cs := ms.process(t)
	ml := redlock.NewMulti([]redlock.Member{lock.New(cs[0], "a"), lock.New(cs[1], "b"), lock.New(cs[2], "c")},
		redlock.WithNodeTimeout(100*time.Millisecond))
	require.Equal(t, 3, ml.Quorum())

	// Another process holds "b" with a plain Mutex.
	oc := ms.process(t)
	b := lock.New(oc[1], "b")
	bHeld, err := b.Lock(ctx)
	require.NoError(t, err)

	_, err = ml.TryLock(ctx)
	require.ErrorIs(t, err, redlock.ErrNotAcquired)
	require.ErrorContains(t, err, "of 3 members, quorum 3")
	// The round is decided by b's answer; a or c may not have answered
	// within the grace on a loaded machine (pending, given back by its
	// attempt), so b's is the one error sure to be there.
	var heldElsewhere []int
	for _, ne := range nodeErrors(err) {
		if ne.Outcome == redlock.OutcomeHeld {
			heldElsewhere = append(heldElsewhere, ne.Index)
		} else {
			require.Equal(t, redlock.OutcomePending, ne.Outcome, "member %d", ne.Index)
		}
	}
	require.Equal(t, []int{1}, heldElsewhere)
	require.NoError(t, ml.Drain(ctx))
	require.Equal(t, []int64{0}, ms.existsOn(t, "a", 0), "nothing held afterwards")
	require.Equal(t, []int64{0}, ms.existsOn(t, "c", 2), "nothing held afterwards")
	require.NoError(t, bHeld.Err(), "the other holder is untouched")
	n, err := b.HoldCount(bHeld)
	require.NoError(t, err)
	require.Equal(t, 1, n)

	// Lock waits, and gets all three once "b" is released.
	type result struct {
		ctx context.Context
		err error
	}
	done := make(chan result, 1)
	go func() {
		h, err := ml.Lock(ctx)
		done <- result{h, err}
	}()
	select {
	case r := <-done:
		t.Fatalf("Lock returned while b was held: %v", r.err)
	case <-time.After(500 * time.Millisecond):
	}
	require.NoError(t, b.Unlock(bHeld))
	var r result
	select {
	case r = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Lock did not get the multi-lock after b was released")
	}
	require.NoError(t, r.err)
	require.Equal(t, []int64{1}, ms.existsOn(t, "a", 0))
	require.Equal(t, []int64{1}, ms.existsOn(t, "b", 1))
	require.Equal(t, []int64{1}, ms.existsOn(t, "c", 2))
	_, err = b.TryLock(ctx)
	require.ErrorIs(t, err, lock.ErrNotAcquired, "the multi-lock holds b")
	require.NoError(t, ml.Unlock(r.ctx))
	for i, k := range []string{"a", "b", "c"} {
		require.Equal(t, []int64{0}, ms.existsOn(t, k, i))
	}
}

// ---- fencing token ------------------------------------------------------------

func TestFencingTokenIsLargestMemberToken(t *testing.T) {
	ctx := ctxT(t)
	ms := startMasters(t, 5)
	const tokenKey = "redisson_lock_token:{fenced}"
	// Independent counters that have drifted apart.
	for i, v := range []int64{5, 100, 17, 0, 42} {
		require.NoError(t, ms.admins[i].Set(ctx, tokenKey, v, 0).Err())
	}
	tokens := func(idx ...int) []int64 {
		out := make([]int64, len(idx))
		for j, i := range idx {
			v, err := ms.admins[i].Get(ctx, tokenKey).Int64()
			if errors.Is(err, redis.Nil) {
				v, err = 0, nil
			}
			require.NoError(t, err)
			out[j] = v
		}
		return out
	}
	rl := redlock.New(mutexes(ms.process(t), "fenced"), redlock.WithUnlockTimeout(500*time.Millisecond))
	held, err := rl.Lock(ctx)
	require.NoError(t, err)
	tok, ok := lock.FencingToken(held)
	require.True(t, ok)
	first := tokens(ms.all()...)
	for i, v := range first {
		require.Greater(t, v, int64(100), "master %d draws from its clock, above its old counter", i)
	}
	require.EqualValues(t, slices.Max(first), tok, "the largest member token")
	require.NoError(t, rl.Unlock(held))
	require.NoError(t, rl.Drain(ctx))

	held, err = rl.Lock(ctx)
	require.NoError(t, err)
	tok2, _ := lock.FencingToken(held)
	require.Greater(t, tok2, tok)
	require.NoError(t, rl.Unlock(held))

	// With the master of the largest token gone, the next token is the
	// largest of the others: drawn from their clocks, it still follows
	// the last one as long as the masters' clocks agree (here, one host).
	top := slices.Index(tokens(ms.all()...), tok2)
	require.GreaterOrEqual(t, top, 0)
	ms.srvs[top].Vanish(t)
	var rest []int
	for i := range 5 {
		if i != top {
			rest = append(rest, i)
		}
	}
	held, err = rl.Lock(ctx)
	require.NoError(t, err)
	tok3, _ := lock.FencingToken(held)
	require.EqualValues(t, slices.Max(tokens(rest...)), tok3)
	require.Greater(t, tok3, tok2, "a token drawn without the last one's master still follows it")
	require.NoError(t, rl.Unlock(held))
}

// ---- rwlock sides as members -------------------------------------------------

func TestRWLockSidesAsMembers(t *testing.T) {
	ctx := ctxT(t)
	ms := startMasters(t, 5)
	sidesOn := func(cs []*redis.Client, write bool) []redlock.Member {
		out := make([]redlock.Member, len(cs))
		for i, c := range cs {
			rw := rwlock.New(c, "doc")
			if write {
				out[i] = rw.WriteLocker()
			} else {
				out[i] = rw.ReadLocker()
			}
		}
		return out
	}
	sides := func(write bool) []redlock.Member {
		return sidesOn(ms.process(t), write) // each Redlock is its own process
	}
	r1, r2, w := redlock.New(sides(false)), redlock.New(sides(false)), redlock.New(sides(true))

	h1, err := r1.TryLock(ctx)
	require.NoError(t, err)
	h2, err := r2.TryLock(ctx)
	require.NoError(t, err, "readers share")
	_, err = w.TryLock(ctx)
	require.ErrorIs(t, err, redlock.ErrNotAcquired, "a writer is excluded by readers")
	nes := nodeErrors(err)
	require.Len(t, nes, 5)
	for _, ne := range nes {
		require.Equal(t, redlock.OutcomeHeld, ne.Outcome)
	}
	require.NoError(t, r1.Unlock(h1))
	require.NoError(t, r1.Drain(ctx))
	_, err = w.TryLock(ctx)
	require.ErrorIs(t, err, redlock.ErrNotAcquired, "one reader left")
	require.NoError(t, r2.Unlock(h2))
	require.NoError(t, r2.Drain(ctx))

	wh, err := w.TryLock(ctx)
	require.NoError(t, err, "no readers left")
	_, err = r1.TryLock(ctx)
	require.ErrorIs(t, err, redlock.ErrNotAcquired, "the writer excludes readers")
	require.Len(t, nodeErrors(err), 5)
	require.NoError(t, w.Unlock(wh))
	require.NoError(t, w.Drain(ctx))
	require.Equal(t, zeros(5), ms.existsOn(t, "doc", ms.all()...))

	// The writer's own read side, in the same process, re-enters
	// (downgrade) on its owner.
	cs := ms.process(t)
	w = redlock.New(sidesOn(cs, true))
	wh, err = w.Lock(ctx)
	require.NoError(t, err)
	rr := redlock.New(sidesOn(cs, false))
	rh, err := rr.TryLock(wh)
	require.NoError(t, err, "the writer may take the read lock")
	require.NoError(t, rr.Unlock(rh))
	require.NoError(t, rr.Drain(ctx))
	require.NoError(t, w.Unlock(wh))
	require.NoError(t, w.Drain(ctx))
	require.Equal(t, zeros(5), ms.existsOn(t, "doc", ms.all()...))
}

// ---- bad input ------------------------------------------------------------------

func TestBadInput(t *testing.T) {
	ctx := ctxT(t)
	ms := startMasters(t, 3)
	cs := ms.process(t)
	good := mutexes(cs, "bad")
	for name, l := range map[string]*redlock.Lock{
		"nil members":      redlock.New(nil),
		"no members":       redlock.New([]redlock.Member{}),
		"multi no members": redlock.NewMulti(nil),
		"nil member":       redlock.New([]redlock.Member{good[0], nil, good[2]}),
		"nil client":       redlock.New([]redlock.Member{good[0], lock.New(nil, "x"), good[2]}),
		"empty name":       redlock.New([]redlock.Member{good[0], good[1], lock.New(cs[2], "")}),
		"nil rwlock":       redlock.New([]redlock.Member{rwlock.New(nil, "x").ReadLocker()}),
		"lease 0":          redlock.New(good, redlock.WithLeaseTime(0)),
		"watchdog 1ms":     redlock.New(good, redlock.WithWatchdogTimeout(time.Millisecond)),
		"wait 0":           redlock.New(good, redlock.WithWaitTimeout(0)),
		"unlock -1":        redlock.New(good, redlock.WithUnlockTimeout(-time.Second)),
		"node timeout 0":   redlock.New(good, redlock.WithNodeTimeout(0)),
		"drift -1":         redlock.NewMulti(good, redlock.WithDrift(-time.Millisecond)),
	} {
		t.Run(name, func(t *testing.T) {
			_, err := l.Lock(ctx)
			require.ErrorIs(t, err, redlock.ErrInvalidArgument)
			t.Log(err)
			_, err = l.TryLock(ctx)
			require.ErrorIs(t, err, redlock.ErrInvalidArgument)
			require.ErrorIs(t, l.Unlock(ctx), redlock.ErrInvalidArgument)
		})
	}
	t.Run("nil context", func(t *testing.T) {
		l := redlock.New(good)
		var nilCtx context.Context
		_, err := l.Lock(nilCtx)
		require.ErrorIs(t, err, redlock.ErrInvalidArgument)
		_, err = l.TryLock(nilCtx)
		require.ErrorIs(t, err, redlock.ErrInvalidArgument)
		require.ErrorIs(t, l.Unlock(nilCtx), redlock.ErrInvalidArgument)
	})
	for i := range 3 {
		n, err := ms.admins[i].DBSize(ctx).Result()
		require.NoError(t, err)
		require.Zero(t, n, "nothing written to master %d", i)
	}
}

// TestTypedNilMemberIsInvalidArgument: a nil *lock.Mutex (or *rwlock.Side)
// in the members is a nil member too. Regression test: New used to panic.
func TestTypedNilMemberIsInvalidArgument(t *testing.T) {
	for name, m := range map[string]redlock.Member{
		"*lock.Mutex":  (*lock.Mutex)(nil),
		"*rwlock.Side": (*rwlock.Side)(nil),
	} {
		t.Run(name, func(t *testing.T) {
			var l *redlock.Lock
			require.NotPanics(t, func() { l = redlock.New([]redlock.Member{m}) })
			if l != nil {
				_, err := l.TryLock(context.Background())
				require.ErrorIs(t, err, redlock.ErrInvalidArgument)
			}
		})
	}
}

// ---- tracing ------------------------------------------------------------------

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
	ctx := ctxT(t)
	ms := startMasters(t, 5)
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	rl := redlock.New(mutexes(ms.process(t), "traced"), redlock.WithTracerProvider(tp))
	held, err := rl.Lock(ctx)
	require.NoError(t, err)
	tok, _ := lock.FencingToken(held) // while the hold lasts
	_, err = redlock.New(mutexes(ms.process(t), "traced"), redlock.WithTracerProvider(tp)).TryLock(ctx)
	require.ErrorIs(t, err, redlock.ErrNotAcquired)
	require.NoError(t, rl.Unlock(held))
	cs := ms.process(t)
	ml := redlock.NewMulti([]redlock.Member{lock.New(cs[0], "m1"), lock.New(cs[1], "m2")}, redlock.WithTracerProvider(tp))
	mh, err := ml.TryLock(ctx)
	require.NoError(t, err)
	require.NoError(t, ml.Unlock(mh))

	spans, releases := acquireSpans(rec)
	require.Len(t, spans, 3)
	require.Equal(t, 2, releases, "one span per Unlock")
	for _, s := range spans {
		require.Equal(t, tracing.SpanAcquireRedlock, s.Name())
		require.Equal(t, tracing.ScopeName, s.InstrumentationScope().Name)
	}
	a := attrs(spans[0].Attributes())
	require.Equal(t, "traced (5 members)", a[tracing.LockName].AsString())
	require.Equal(t, "redlock", a[tracing.Primitive].AsString())
	require.NotEmpty(t, a[tracing.Owner].AsString())
	require.EqualValues(t, 5, a[tracing.Nodes].AsInt64())
	require.EqualValues(t, 3, a[tracing.Quorum].AsInt64())
	require.EqualValues(t, 5, a[tracing.NodesWon].AsInt64())
	require.Positive(t, a[tracing.ValidityMillis].AsInt64())
	require.LessOrEqual(t, a[tracing.ValidityMillis].AsInt64(), int64(30000))
	require.Equal(t, tracing.OutcomeAcquired, a[tracing.Outcome].AsString())
	require.EqualValues(t, 1, a[tracing.Attempts].AsInt64())
	require.EqualValues(t, 30000, a[tracing.LeaseMillis].AsInt64())
	require.Equal(t, tok, a[tracing.FencingToken].AsInt64())
	_, hasWait := a[tracing.WaitMillis]
	require.True(t, hasWait)
	require.Equal(t, map[int64]string{0: "acquired", 1: "acquired", 2: "acquired", 3: "acquired", 4: "acquired"}, memberEvents(spans[0]))

	try := attrs(spans[1].Attributes())
	require.Equal(t, tracing.OutcomeNotAcquired, try[tracing.Outcome].AsString())
	require.EqualValues(t, 0, try[tracing.NodesWon].AsInt64())
	require.True(t, try[tracing.Try].AsBool())
	require.Equal(t, codes.Unset, spans[1].Status().Code, "contention on a Try is not an error")
	for i, o := range memberEvents(spans[1]) {
		require.Equal(t, redlock.OutcomeHeld, o, "member %d", i)
	}
	require.Len(t, memberEvents(spans[1]), 5)

	multi := attrs(spans[2].Attributes())
	require.Equal(t, "multilock", multi[tracing.Primitive].AsString())
	require.Equal(t, "m1,m2 (2 members)", multi[tracing.LockName].AsString())
	require.EqualValues(t, 2, multi[tracing.Quorum].AsInt64())
	require.EqualValues(t, 2, multi[tracing.NodesWon].AsInt64())
}

// ---- contention ----------------------------------------------------------------

// TestContentionNoOverlap: two processes (each its own client per master,
// so its own pools and hubs) run 4 goroutines each on one 5-master
// Redlock, and record every critical section; any overlap fails.
func TestContentionNoOverlap(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	ms := startMasters(t, 5)
	const (
		procs   = 2
		perProc = 4
		iters   = 15
	)
	type interval struct {
		start, end time.Time
		who        string
	}
	var (
		inside, overlaps atomic.Int32
		mu               sync.Mutex
		history          []interval
		wg               sync.WaitGroup
	)
	start := time.Now()
	var locks []*redlock.Lock
	for p := range procs {
		rl := redlock.New(mutexes(ms.process(t), "contended"), redlock.WithNodeTimeout(100*time.Millisecond))
		locks = append(locks, rl)
		for g := range perProc {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range iters {
					held, err := rl.Lock(ctx)
					if err != nil {
						t.Errorf("process %d goroutine %d: %v", p, g, err)
						return
					}
					in := time.Now()
					if inside.Add(1) != 1 {
						overlaps.Add(1)
					}
					time.Sleep(time.Millisecond)
					inside.Add(-1)
					out := time.Now()
					if err := rl.Unlock(held); err != nil {
						t.Errorf("unlock: %v", err)
					}
					mu.Lock()
					history = append(history, interval{in, out, fmt.Sprintf("%d/%d", p, g)})
					mu.Unlock()
				}
			}()
		}
	}
	wg.Wait()
	t.Logf("%d critical sections by %d goroutines in %v", len(history), procs*perProc, time.Since(start))
	require.NoError(t, ctx.Err(), "bounded in time")
	require.Zero(t, overlaps.Load(), "two holders inside at once")
	require.Len(t, history, procs*perProc*iters)
	n := 0
	for i := range history {
		for j := i + 1; j < len(history); j++ {
			if history[i].start.Before(history[j].end) && history[j].start.Before(history[i].end) {
				n++
				t.Errorf("overlap: %s and %s", history[i].who, history[j].who)
			}
		}
	}
	require.Zero(t, n)
	for _, rl := range locks {
		require.NoError(t, rl.Drain(ctx))
	}
	require.Equal(t, zeros(5), ms.existsOn(t, "contended", ms.all()...))
}

// failNextPipeline fails the next pipeline sent through the client it
// hooks, before it is written, as a connection reset would.
type failNextPipeline struct{ armed atomic.Bool }

func (f *failNextPipeline) DialHook(next redis.DialHook) redis.DialHook { return next }

func (f *failNextPipeline) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (f *failNextPipeline) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if f.armed.CompareAndSwap(true, false) {
			for _, c := range cmds {
				c.SetErr(redistest.ErrReadTimeout)
			}
			return redistest.ErrReadTimeout
		}
		return next(ctx, cmds)
	}
}

// TestRenewalRetriesAFailedMasterWhileAnotherStalls: of three masters one
// stalls past the lease and another fails one renewal; the third renews.
// The round cannot be decided until the stalled one answers, so it is
// sent again within the lease instead: the failed master renews then, a
// quorum with the third, and the hold goes on.
func TestRenewalRetriesAFailedMasterWhileAnotherStalls(t *testing.T) {
	ctx := ctxT(t)
	ms := startMasters(t, 3)
	cs := ms.process(t, func(o *redis.Options) { o.ReadTimeout = 10 * time.Second })
	blip := &failNextPipeline{}
	cs[1].AddHook(blip)
	const lease = renewLease
	rl := redlock.New(mutexes(cs, "blip"), redlock.WithWatchdogTimeout(lease), redlock.WithUnlockTimeout(3*lease))
	held, err := rl.Lock(ctx)
	require.NoError(t, err)
	ms.pause(t, 0, 3*lease)
	blip.armed.Store(true)
	deadline := time.Now().Add(2*lease + lease/2)
	for time.Now().Before(deadline) && held.Err() == nil {
		time.Sleep(20 * time.Millisecond)
	}
	require.False(t, blip.armed.Load(), "no renewal was sent to master 1")
	require.NoError(t, context.Cause(held), "masters 1 and 2 could renew, a quorum, yet the hold was declared lost")
	require.NoError(t, rl.Unlock(held))
	require.NoError(t, rl.Drain(ctx))
}
