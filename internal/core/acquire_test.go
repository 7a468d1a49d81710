package core_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/relock-go/relock/internal/conn"
	"github.com/relock-go/relock/internal/core"
	"github.com/relock-go/relock/internal/errs"
	"github.com/relock-go/relock/internal/telemetry"
	"github.com/relock-go/relock/internal/testkit/redistest"
	"github.com/relock-go/relock/tracing"
)

const (
	// doneTimeout bounds every wait for an acquire to return: generous for
	// a slow machine under -race, yet well below the one-minute TTLs the
	// tests use to mean "no fallback timer will fire".
	doneTimeout = 20 * time.Second
	// long is a TTL or lease that never runs out during a test.
	long = time.Minute
)

var noopTracer = noop.NewTracerProvider().Tracer("test")

func channelOf(t *testing.T) string {
	return "redisson_lock__channel:{" + t.Name() + "}"
}

// mockLock is a lock as the Try functions see it: free or held by one
// named owner. A failed try reports ttl. It counts the tries of each
// owner and notes when each try was made.
type mockLock struct {
	mu     sync.Mutex
	holder string // "" when free
	ttl    time.Duration
	// freeAfter > 0: the lock is freed (as if the holder's lease ran out,
	// with no unlock message) once that many tries have been made.
	freeAfter int
	// errAt > 0: the try of that number fails with err.
	errAt int
	err   error

	calls int
	byWho map[string]int
	times []time.Time
}

func newMock(holder string, ttl time.Duration) *mockLock {
	return &mockLock{holder: holder, ttl: ttl, byWho: map[string]int{}}
}

func (m *mockLock) try(who string) func(context.Context) (core.Result, error) {
	return func(context.Context) (core.Result, error) {
		m.mu.Lock()
		defer m.mu.Unlock()
		if m.freeAfter > 0 && m.calls >= m.freeAfter {
			m.holder = ""
		}
		m.calls++
		m.byWho[who]++
		m.times = append(m.times, time.Now())
		if m.errAt == m.calls {
			return core.Result{}, m.err
		}
		if m.holder == "" || m.holder == who {
			m.holder = who
			return core.Result{Acquired: true}, nil
		}
		return core.Result{TTL: m.ttl}, nil
	}
}

func (m *mockLock) set(holder string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.holder = holder
}

func (m *mockLock) heldBy() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.holder
}

func (m *mockLock) tries() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.calls
}

func (m *mockLock) triesOf(who string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.byWho[who]
}

func (m *mockLock) tryTimes() []time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]time.Time(nil), m.times...)
}

func (m *mockLock) requireTriesEventually(t *testing.T, n int) {
	t.Helper()
	require.Eventually(t, func() bool { return m.tries() >= n }, settle, poll, "never reached %d tries", n)
	require.Equal(t, n, m.tries(), "more tries than expected")
}

// call is an acquisition as Do takes it: the request and its trace.
type call struct {
	core.Request
	trace core.Trace
}

func request(hub *core.Hub, channel string, try func(context.Context) (core.Result, error)) call {
	return call{
		Request: core.Request{
			Hub:      hub,
			Channel:  channel,
			Fallback: long,
			Attempt:  core.TryFunc(try),
		},
		trace: core.Trace{Tracer: noopTracer, Name: tracing.SpanAcquireLock},
	}
}

func start(ctx context.Context, req call) <-chan error {
	done := make(chan error, 1)
	go func() { done <- do(ctx, req) }()
	return done
}

func await(t *testing.T, done <-chan error, what string) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(doneTimeout):
		t.Fatalf("%s: acquire did not return within %v", what, doneTimeout)
		return nil
	}
}

func requireRunning(t *testing.T, done <-chan error, what string) {
	t.Helper()
	select {
	case err := <-done:
		t.Fatalf("%s: returned (%v), want still waiting", what, err)
	default:
	}
}

// probeCtx tells how far an acquire has got by counting the calls of its
// Done method. The loop and the hub call Done only to wait on the context:
// Hub.Join once the waiter is in the local queue (the first call, when
// the channel is already subscribed so Join sends nothing to Redis), then
// the loop's own wait (the second). A test of the arrival order uses it to
// know that a goroutine is queued, and waiting, before it goes on.
type probeCtx struct {
	context.Context
	mu      sync.Mutex
	calls   int
	queued  chan struct{}
	waiting chan struct{}
}

func newProbeCtx(parent context.Context) *probeCtx {
	return &probeCtx{Context: parent, queued: make(chan struct{}), waiting: make(chan struct{})}
}

func (c *probeCtx) Done() <-chan struct{} {
	c.mu.Lock()
	c.calls++
	switch c.calls {
	case 1:
		close(c.queued)
	case 2:
		close(c.waiting)
	}
	c.mu.Unlock()
	return c.Context.Done()
}

// awaitWaiting returns once the goroutine is queued and waits.
func (c *probeCtx) awaitWaiting(t *testing.T, what string) {
	t.Helper()
	for _, ch := range []chan struct{}{c.queued, c.waiting} {
		select {
		case <-ch:
		case <-time.After(doneTimeout):
			t.Fatalf("%s: never queued and waiting", what)
		}
	}
}

// pubSubConnsCreated counts the pub/sub connections the client ever made.
func pubSubConnsCreated(c *redis.Client) uint32 {
	return c.PoolStats().PubSubStats.Created
}

// requireNoPubSubEventually waits until the hub has left every channel
// and, on a real server, closed its connection after the linger.
func requireNoPubSubEventually(t *testing.T, ctx context.Context, env *redistest.Env, hub *core.Hub, channel string) {
	t.Helper()
	assert.False(t, hub.Waiting(channel), "no waiter left in the local queue")
	require.Eventually(t, func() bool {
		n, err := env.Client.PubSubNumSub(ctx, channel).Result()
		return err == nil && n[channel] == 0
	}, settle, poll, "the channel is unsubscribed")
	if env.Server != nil {
		require.Eventually(t, func() bool {
			n, err := redistest.CountPubSubConns(ctx, env.Client)
			return err == nil && n == 0
		}, settle, poll, "the pub/sub connection is closed")
	}
}

func TestUncontendedTriesOnceAndNeverSubscribes(t *testing.T) {
	t.Parallel()
	redistest.ForBackends(t, func(t *testing.T, env *redistest.Env) {
		ctx := testContext(t)
		hub := core.For(conn.Of(env.Client))
		m := newMock("", long)

		require.NoError(t, do(ctx, request(hub, channelOf(t), m.try("me"))))
		assert.Equal(t, 1, m.tries())
		assert.Equal(t, "me", m.heldBy())
		assert.False(t, hub.Waiting(channelOf(t)))
		assert.Zero(t, pubSubConnsCreated(env.Client), "the uncontended path opened a pub/sub connection")
		if env.Server != nil {
			n, err := redistest.CountPubSubConns(ctx, env.Client)
			require.NoError(t, err)
			assert.Zero(t, n)
		}
	})
}

func TestSingleTryUnderContention(t *testing.T) {
	t.Parallel()
	redistest.ForBackends(t, func(t *testing.T, env *redistest.Env) {
		ctx := testContext(t)
		hub := core.For(conn.Of(env.Client))
		m := newMock("other", long)

		req := request(hub, channelOf(t), m.try("me"))
		req.Entry = core.SingleTry
		err := do(ctx, req)
		require.ErrorIs(t, err, errs.ErrNotAcquired)
		assert.Equal(t, 1, m.tries(), "one attempt")
		assert.Equal(t, "other", m.heldBy())
		assert.False(t, hub.Waiting(channelOf(t)))
		assert.Zero(t, pubSubConnsCreated(env.Client), "a TryLock never subscribes")
	})
}

func TestHeadTriesAgainOnceSubscribed(t *testing.T) {
	t.Parallel()
	redistest.ForBackends(t, func(t *testing.T, env *redistest.Env) {
		ctx := testContext(t)
		hub := core.For(conn.Of(env.Client))
		// Freed between the first try and the subscription: no message
		// will come, and the TTL is long, so only the try right after
		// subscribing can take it.
		m := newMock("other", long)
		m.freeAfter = 1

		err := await(t, start(ctx, request(hub, channelOf(t), m.try("me"))), "acquire")
		require.NoError(t, err)
		assert.Equal(t, 2, m.tries())
		assert.Equal(t, "me", m.heldBy())
		assert.Equal(t, uint32(1), pubSubConnsCreated(env.Client), "the contended path subscribed")
		requireNoPubSubEventually(t, ctx, env, hub, channelOf(t))
	})
}

func TestFallbackTimerRetriesAfterTheTTL(t *testing.T) {
	t.Parallel()
	redistest.ForBackends(t, func(t *testing.T, env *redistest.Env) {
		ctx := testContext(t)
		hub := core.For(conn.Of(env.Client))
		const ttl = 50 * time.Millisecond
		// The holder's lease runs out after two tries; no unlock message.
		m := newMock("other", ttl)
		m.freeAfter = 2

		err := await(t, start(ctx, request(hub, channelOf(t), m.try("me"))), "acquire")
		require.NoError(t, err)
		require.Equal(t, 3, m.tries(), "try, try once subscribed, retry when the TTL passed")
		times := m.tryTimes()
		assert.GreaterOrEqual(t, times[2].Sub(times[1]), ttl, "the retry waited for the TTL the failed try returned")
		requireNoPubSubEventually(t, ctx, env, hub, channelOf(t))
	})
}

func TestUnlockMessageWakesBeforeTheTTL(t *testing.T) {
	t.Parallel()
	redistest.ForBackends(t, func(t *testing.T, env *redistest.Env) {
		ctx := testContext(t)
		hub := core.For(conn.Of(env.Client))
		ch := channelOf(t)
		m := newMock("other", long)

		done := start(ctx, request(hub, ch, m.try("me")))
		// The second try comes after Join returned: subscribed.
		m.requireTriesEventually(t, 2)
		requireRunning(t, done, "acquire while the lock is held")

		m.set("")
		n, err := env.Client.Publish(ctx, ch, "0").Result()
		require.NoError(t, err)
		require.Equal(t, int64(1), n, "the waiter is subscribed")
		// Woken by the message: long before the one-minute TTL.
		require.NoError(t, await(t, done, "acquire after the unlock message"))
		assert.Equal(t, 3, m.tries())
		assert.Equal(t, "me", m.heldBy())
		requireNoPubSubEventually(t, ctx, env, hub, ch)
	})
}

func TestWaitBoundReturnsNotAcquired(t *testing.T) {
	t.Parallel()
	redistest.ForBackends(t, func(t *testing.T, env *redistest.Env) {
		ctx := testContext(t)
		hub := core.For(conn.Of(env.Client))
		m := newMock("other", long)

		req := request(hub, channelOf(t), m.try("me"))
		req.Wait = 100 * time.Millisecond
		began := time.Now()
		err := await(t, start(ctx, req), "bounded acquire")
		require.ErrorIs(t, err, errs.ErrNotAcquired)
		assert.GreaterOrEqual(t, time.Since(began), req.Wait, "it waited for the bound")
		assert.Equal(t, 2, m.tries())
		assert.Equal(t, "other", m.heldBy())
		requireNoPubSubEventually(t, ctx, env, hub, channelOf(t))
	})
}

func TestEndedContext(t *testing.T) {
	t.Parallel()
	redistest.ForBackends(t, func(t *testing.T, env *redistest.Env) {
		hub := core.For(conn.Of(env.Client))

		t.Run("cancelled while waiting", func(t *testing.T) {
			ch := channelOf(t)
			m := newMock("other", long)
			ctx, cancel := context.WithCancel(testContext(t))
			defer cancel()
			done := start(ctx, request(hub, ch, m.try("me")))
			m.requireTriesEventually(t, 2)
			cancel()
			require.ErrorIs(t, await(t, done, "cancelled acquire"), context.Canceled)
			assert.Equal(t, 2, m.tries())
			requireNoPubSubEventually(t, testContext(t), env, hub, ch)
		})

		t.Run("cancelled with a cause", func(t *testing.T) {
			ch := channelOf(t)
			m := newMock("other", long)
			ctx, cancel := context.WithCancelCause(testContext(t))
			defer cancel(nil)
			done := start(ctx, request(hub, ch, m.try("me")))
			m.requireTriesEventually(t, 2)
			cause := errors.New("request abandoned")
			cancel(cause)
			err := await(t, done, "cancelled acquire")
			require.ErrorIs(t, err, cause)
			requireNoPubSubEventually(t, testContext(t), env, hub, ch)
		})

		t.Run("deadline", func(t *testing.T) {
			ch := channelOf(t)
			m := newMock("other", long)
			ctx, cancel := context.WithTimeout(testContext(t), 200*time.Millisecond)
			defer cancel()
			err := await(t, start(ctx, request(hub, ch, m.try("me"))), "acquire with a deadline")
			require.ErrorIs(t, err, context.DeadlineExceeded)
			assert.Equal(t, 2, m.tries())
			requireNoPubSubEventually(t, testContext(t), env, hub, ch)
		})

		t.Run("already ended", func(t *testing.T) {
			ch := channelOf(t)
			m := newMock("", long)
			ctx, cancel := context.WithCancelCause(testContext(t))
			cause := errors.New("gone before it began")
			cancel(cause)
			err := do(ctx, request(hub, ch, m.try("me")))
			require.ErrorIs(t, err, cause)
			assert.Zero(t, m.tries(), "no try on an ended context")
			assert.Empty(t, m.heldBy())
		})
	})
}

func TestLocalWaitersAreServedInArrivalOrder(t *testing.T) {
	t.Parallel()
	redistest.ForBackends(t, func(t *testing.T, env *redistest.Env) {
		ctx := testContext(t)
		hub := core.For(conn.Of(env.Client))
		ch := channelOf(t)
		m := newMock("holder", long)

		const n = 8
		type result struct {
			id  int
			err error
		}
		acquired := make(chan result, n)
		var wg sync.WaitGroup
		for i := range n {
			pctx := newProbeCtx(ctx)
			wg.Go(func() {
				err := do(pctx, request(hub, ch, m.try(fmt.Sprint(i))))
				acquired <- result{i, err}
			})
			if i == 0 {
				// It tries, queues (and subscribes), and tries again as
				// the head.
				m.requireTriesEventually(t, 2)
			} else {
				pctx.awaitWaiting(t, fmt.Sprintf("goroutine %d", i))
			}
			assert.True(t, hub.Waiting(ch))
		}
		// Only the first arrival tried; the others queued behind it
		// without trying.
		assert.Equal(t, 2, m.triesOf("0"))
		for i := 1; i < n; i++ {
			assert.Zero(t, m.triesOf(fmt.Sprint(i)), "goroutine %d tried while others waited", i)
		}

		// Release one hold at a time, as a local Unlock does.
		var order []int
		prev := "holder"
		for range n {
			require.Equal(t, prev, m.heldBy())
			m.set("")
			hub.Release(ch)
			select {
			case r := <-acquired:
				require.NoError(t, r.err)
				order = append(order, r.id)
				prev = fmt.Sprint(r.id)
			case <-time.After(doneTimeout):
				t.Fatalf("no waiter acquired after release %d", len(order)+1)
			}
		}
		wg.Wait()
		assert.Equal(t, []int{0, 1, 2, 3, 4, 5, 6, 7}, order, "first come, first served")
		// Each waiter after the first tried exactly once: when its turn came.
		for i := 1; i < n; i++ {
			assert.Equal(t, 1, m.triesOf(fmt.Sprint(i)), "tries of goroutine %d", i)
		}
		requireNoPubSubEventually(t, ctx, env, hub, ch)
	})
}

func TestNewcomerDoesNotBargePastWaiters(t *testing.T) {
	t.Parallel()
	redistest.ForBackends(t, func(t *testing.T, env *redistest.Env) {
		ctx := testContext(t)
		hub := core.For(conn.Of(env.Client))
		ch := channelOf(t)
		m := newMock("other", long)

		doneA := start(ctx, request(hub, ch, m.try("A")))
		m.requireTriesEventually(t, 2) // A is the head, and has tried
		// The lock comes free; A has not heard of it yet.
		m.set("")

		bctx := newProbeCtx(ctx)
		doneB := start(bctx, request(hub, ch, m.try("B")))
		bctx.awaitWaiting(t, "B")
		assert.Zero(t, m.triesOf("B"), "B tried the lock while A was waiting for it")
		assert.Empty(t, m.heldBy())
		requireRunning(t, doneB, "B")

		hub.Release(ch)
		require.NoError(t, await(t, doneA, "A"))
		assert.Equal(t, "A", m.heldBy())
		// B became the head behind a local holder: it waits for a release
		// (or the holder's lease), it does not try.
		assert.Zero(t, m.triesOf("B"))
		requireRunning(t, doneB, "B")

		m.set("")
		hub.Release(ch)
		require.NoError(t, await(t, doneB, "B"))
		assert.Equal(t, "B", m.heldBy())
		assert.Equal(t, 1, m.triesOf("B"))
		requireNoPubSubEventually(t, ctx, env, hub, ch)
	})
}

func TestPromotedWaiterFallsBackOnTheHoldersLease(t *testing.T) {
	t.Parallel()
	redistest.ForBackends(t, func(t *testing.T, env *redistest.Env) {
		ctx := testContext(t)
		hub := core.For(conn.Of(env.Client))
		ch := channelOf(t)
		m := newMock("other", long)
		const hold = 200 * time.Millisecond

		reqA := request(hub, ch, m.try("A"))
		reqA.Fallback = hold
		doneA := start(ctx, reqA)
		m.requireTriesEventually(t, 2)
		bctx := newProbeCtx(ctx)
		doneB := start(bctx, request(hub, ch, m.try("B")))
		bctx.awaitWaiting(t, "B")

		m.set("")
		hub.Release(ch)
		require.NoError(t, await(t, doneA, "A"))
		// A's hold ends without a release in this process (its lease ran
		// out): B, promoted with A's lease as its fallback, tries then.
		m.set("")
		require.NoError(t, await(t, doneB, "B"))
		assert.Equal(t, "B", m.heldBy())
		times := m.tryTimes()
		require.Len(t, times, 4, "A, A as head, A released to, B after A's lease")
		assert.GreaterOrEqual(t, times[3].Sub(times[2]), hold, "B waited for A's lease")
		requireNoPubSubEventually(t, ctx, env, hub, ch)
	})
}

func TestDirectBypassesTheQueue(t *testing.T) {
	t.Parallel()
	redistest.ForBackends(t, func(t *testing.T, env *redistest.Env) {
		ctx := testContext(t)
		hub := core.For(conn.Of(env.Client))
		ch := channelOf(t)
		m := newMock("owner", long)

		doneW := start(ctx, request(hub, ch, m.try("waiter")))
		m.requireTriesEventually(t, 2)
		require.True(t, hub.Waiting(ch))

		// The owner re-enters while another goroutine waits: it must not
		// queue behind it (that would deadlock).
		req := request(hub, ch, m.try("owner"))
		req.Entry = core.Reenter
		require.NoError(t, await(t, start(ctx, req), "reentrant acquire"))
		assert.Equal(t, 1, m.triesOf("owner"))
		assert.True(t, hub.Waiting(ch), "the waiter is still queued")
		requireRunning(t, doneW, "waiter")

		m.set("")
		hub.Release(ch)
		require.NoError(t, await(t, doneW, "waiter"))
		requireNoPubSubEventually(t, ctx, env, hub, ch)
	})
}

func TestTryErrorsAreReturned(t *testing.T) {
	t.Parallel()
	errBoom := errors.New("boom")
	redistest.ForBackends(t, func(t *testing.T, env *redistest.Env) {
		hub := core.For(conn.Of(env.Client))

		t.Run("first try", func(t *testing.T) {
			ctx := testContext(t)
			m := newMock("", long)
			m.errAt, m.err = 1, errBoom
			err := do(ctx, request(hub, channelOf(t), m.try("me")))
			require.ErrorIs(t, err, errBoom)
			assert.Equal(t, 1, m.tries())
			assert.False(t, hub.Waiting(channelOf(t)))
		})

		t.Run("try while waiting", func(t *testing.T) {
			ctx := testContext(t)
			m := newMock("other", long)
			m.errAt, m.err = 2, errBoom
			err := await(t, start(ctx, request(hub, channelOf(t), m.try("me"))), "acquire")
			require.ErrorIs(t, err, errBoom)
			assert.Equal(t, 2, m.tries())
			requireNoPubSubEventually(t, ctx, env, hub, channelOf(t))
		})

		t.Run("the next waiter takes over", func(t *testing.T) {
			ctx := testContext(t)
			ch := channelOf(t)
			m := newMock("other", long)
			m.errAt, m.err = 3, errBoom // A's try when woken
			doneA := start(ctx, request(hub, ch, m.try("A")))
			m.requireTriesEventually(t, 2)
			bctx := newProbeCtx(ctx)
			doneB := start(bctx, request(hub, ch, m.try("B")))
			bctx.awaitWaiting(t, "B")

			m.set("")
			hub.Release(ch)
			require.ErrorIs(t, await(t, doneA, "A"), errBoom)
			// A left without the lock: B is woken to try.
			require.NoError(t, await(t, doneB, "B"))
			assert.Equal(t, "B", m.heldBy())
			requireNoPubSubEventually(t, ctx, env, hub, ch)
		})
	})
}

// spanOf runs one acquire with a recording tracer and returns its span.
func spanOf(t *testing.T, run func(tracer trace.Tracer) error) (sdktrace.ReadOnlySpan, error) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	err := run(tp.Tracer("test"))
	spans := rec.Ended()
	require.Len(t, spans, 1, "one span per acquire")
	return spans[0], err
}

func attr(span sdktrace.ReadOnlySpan, key attribute.Key) (attribute.Value, bool) {
	for _, kv := range span.Attributes() {
		if kv.Key == key {
			return kv.Value, true
		}
	}
	return attribute.Value{}, false
}

func TestSpan(t *testing.T) {
	t.Parallel()
	_, client := redistest.Miniredis(t)
	hub := core.For(conn.Of(client))
	errBoom := errors.New("boom")

	cases := []struct {
		name     string
		mock     func() *mockLock
		adjust   func(*core.Request)
		ctx      func(t *testing.T) context.Context
		wantErr  error
		outcome  string
		attempts int64
		try      bool
		minWait  time.Duration
	}{
		{
			name:     "acquired at once",
			mock:     func() *mockLock { return newMock("", long) },
			outcome:  tracing.OutcomeAcquired,
			attempts: 1,
		},
		{
			name: "acquired after the TTL",
			mock: func() *mockLock {
				m := newMock("other", 50*time.Millisecond)
				m.freeAfter = 2
				return m
			},
			outcome:  tracing.OutcomeAcquired,
			attempts: 3,
			minWait:  50 * time.Millisecond,
		},
		{
			name:     "TryLock contention",
			mock:     func() *mockLock { return newMock("other", long) },
			adjust:   func(r *core.Request) { r.Entry = core.SingleTry },
			wantErr:  errs.ErrNotAcquired,
			outcome:  tracing.OutcomeNotAcquired,
			attempts: 1,
			try:      true,
		},
		{
			name:     "wait bound",
			mock:     func() *mockLock { return newMock("other", long) },
			adjust:   func(r *core.Request) { r.Wait = 100 * time.Millisecond },
			wantErr:  errs.ErrNotAcquired,
			outcome:  tracing.OutcomeNotAcquired,
			attempts: 2,
			minWait:  100 * time.Millisecond,
		},
		{
			name: "deadline",
			mock: func() *mockLock { return newMock("other", long) },
			ctx: func(t *testing.T) context.Context {
				ctx, cancel := context.WithTimeout(testContext(t), 100*time.Millisecond)
				t.Cleanup(cancel)
				return ctx
			},
			wantErr:  context.DeadlineExceeded,
			outcome:  tracing.OutcomeCancelled,
			attempts: 2,
		},
		{
			name: "error",
			mock: func() *mockLock {
				m := newMock("", long)
				m.errAt, m.err = 1, errBoom
				return m
			},
			wantErr:  errBoom,
			outcome:  tracing.OutcomeError,
			attempts: 1,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := testContext(t)
			if tc.ctx != nil {
				ctx = tc.ctx(t)
			}
			m := tc.mock()
			span, err := spanOf(t, func(tracer trace.Tracer) error {
				req := request(hub, "redisson_lock__channel:{"+t.Name()+"}", m.try("me"))
				req.trace.Tracer = tracer
				req.trace.Start = telemetry.SpanStart(tracing.LockName.String("order:1"), tracing.Primitive.String("lock"))
				if tc.adjust != nil {
					tc.adjust(&req.Request)
				}
				return do(ctx, req)
			})
			if tc.wantErr == nil {
				require.NoError(t, err)
			} else {
				require.ErrorIs(t, err, tc.wantErr)
			}

			assert.Equal(t, tracing.SpanAcquireLock, span.Name())
			assert.Equal(t, trace.SpanKindClient, span.SpanKind())
			v, ok := attr(span, tracing.LockName)
			assert.True(t, ok, "the request's attributes are on the span")
			assert.Equal(t, "order:1", v.AsString())
			v, ok = attr(span, tracing.Outcome)
			assert.True(t, ok, "outcome")
			assert.Equal(t, tc.outcome, v.AsString())
			v, ok = attr(span, tracing.Attempts)
			assert.True(t, ok, "attempts")
			assert.Equal(t, tc.attempts, v.AsInt64())
			assert.Equal(t, int(tc.attempts), m.tries(), "attempts counts the tries")
			v, ok = attr(span, tracing.WaitMillis)
			assert.True(t, ok, "wait_ms")
			assert.Equal(t, attribute.FLOAT64, v.Type())
			assert.GreaterOrEqual(t, v.AsFloat64(), float64(tc.minWait.Milliseconds()))
			v, ok = attr(span, tracing.Try)
			assert.True(t, ok, "try")
			assert.Equal(t, tc.try, v.AsBool())

			if tc.outcome == tracing.OutcomeError {
				assert.Equal(t, codes.Error, span.Status().Code)
				assert.Equal(t, errBoom.Error(), span.Status().Description)
				require.NotEmpty(t, span.Events(), "the error is recorded")
				assert.Equal(t, "exception", span.Events()[0].Name)
			} else {
				assert.Equal(t, codes.Unset, span.Status().Code, "contention and cancellation are not errors")
				assert.Empty(t, span.Events())
			}
		})
	}
}

// A Try honours its context, as a script call through go-redis does, so
// the context can end during a try. The loop reports the context's end
// the same way whichever try it interrupts: the wait bound as
// ErrNotAcquired, a cancellation as the context's cause, and neither as
// an error on the span. The try before the subscription is no exception
// for a cancellation; the wait bound does not cut that try short (see
// TestShortWaitBound), only the waiting after it.
func TestContextEndingDuringATry(t *testing.T) {
	t.Parallel()
	_, client := redistest.Miniredis(t)
	hub := core.For(conn.Of(client))

	// blockAt returns a Try that fails with a TTL, except the try of that
	// number, which blocks until its context ends and returns ctx.Err(),
	// as go-redis does. started is closed when that try begins.
	blockAt := func(n int) (func(context.Context) (core.Result, error), chan struct{}) {
		var mu sync.Mutex
		calls := 0
		started := make(chan struct{})
		return func(ctx context.Context) (core.Result, error) {
			mu.Lock()
			calls++
			c := calls
			mu.Unlock()
			if c != n {
				return core.Result{TTL: long}, nil
			}
			close(started)
			<-ctx.Done()
			return core.Result{}, ctx.Err()
		}, started
	}

	for _, at := range []struct {
		name string
		n    int
	}{{"first try", 1}, {"try once subscribed", 2}} {
		t.Run("wait bound passes during the "+at.name, func(t *testing.T) {
			t.Parallel()
			try, _ := blockAt(at.n)
			if at.n == 1 {
				// The first try is not bounded by the wait (a short bound
				// must not refuse a free lock): it completes, and the
				// bound, already past, ends the acquire right after it.
				try = func(ctx context.Context) (core.Result, error) {
					time.Sleep(100 * time.Millisecond)
					if ctx.Err() != nil {
						return core.Result{}, ctx.Err()
					}
					return core.Result{TTL: long}, nil
				}
			}
			span, err := spanOf(t, func(tracer trace.Tracer) error {
				req := request(hub, "redisson_lock__channel:{"+t.Name()+"}", try)
				req.trace.Tracer = tracer
				req.Wait = 50 * time.Millisecond
				return do(testContext(t), req)
			})
			require.ErrorIs(t, err, errs.ErrNotAcquired, "WithWaitTimeout ends in ErrNotAcquired, got %v", err)
			v, _ := attr(span, tracing.Outcome)
			assert.Equal(t, tracing.OutcomeNotAcquired, v.AsString())
			assert.Equal(t, codes.Unset, span.Status().Code)
		})

		t.Run("cancelled during the "+at.name, func(t *testing.T) {
			t.Parallel()
			try, started := blockAt(at.n)
			ctx, cancel := context.WithCancelCause(testContext(t))
			defer cancel(nil)
			cause := errors.New("request abandoned")
			go func() {
				<-started
				cancel(cause)
			}()
			span, err := spanOf(t, func(tracer trace.Tracer) error {
				req := request(hub, "redisson_lock__channel:{"+t.Name()+"}", try)
				req.trace.Tracer = tracer
				return do(ctx, req)
			})
			require.ErrorIs(t, err, cause, "a cancelled acquire returns the cause, got %v", err)
			v, _ := attr(span, tracing.Outcome)
			assert.Equal(t, tracing.OutcomeCancelled, v.AsString())
			assert.Equal(t, codes.Unset, span.Status().Code)
		})
	}
}

// do is core.Acquire for tests that look at the error alone.
func do(ctx context.Context, req call) error {
	err := core.Acquire(ctx, req.trace, req.Request)
	return err
}
