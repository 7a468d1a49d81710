package core_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/conn"
	"github.com/relock-go/relock/internal/core"
	"github.com/relock-go/relock/internal/errs"
	"github.com/relock-go/relock/internal/testkit/redistest"
)

// recorded is an Attempt that notes, for each try, whether it ran at the
// head of the local queue, and each Abandon with its error.
type recorded struct {
	try func(context.Context) (core.Result, error)

	mu        sync.Mutex
	atHead    []bool
	abandoned []error
}

func (r *recorded) Send(ctx context.Context, atHead bool) (core.Reply, error) {
	r.mu.Lock()
	r.atHead = append(r.atHead, atHead)
	r.mu.Unlock()
	return core.TryFunc(r.try).Send(ctx, atHead)
}

func (r *recorded) Took(ctx context.Context, rep core.Reply, err error, atHead bool) (core.Result, error) {
	return core.TryFunc(r.try).Took(ctx, rep, err, atHead)
}

func (r *recorded) Keep(context.Context, bool) error { return nil }

func (r *recorded) Abandon(_ context.Context, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.abandoned = append(r.abandoned, err)
}

func (r *recorded) seen() (atHead []bool, abandoned []error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]bool(nil), r.atHead...), append([]error(nil), r.abandoned...)
}

// The loop owns the cleanup: an acquisition that fails is abandoned once,
// with its error, and one that succeeds never is.
func TestLoopAbandonsOnlyWhatFailed(t *testing.T) {
	t.Parallel()
	redistest.ForBackends(t, func(t *testing.T, env *redistest.Env) {
		ctx := testContext(t)
		hub := core.For(conn.Of(env.Client))

		held := &recorded{try: newMock("other", long).try("me")}
		req := request(hub, channelOf(t), nil)
		req.Attempt, req.Entry = held, core.SingleTry
		err := do(ctx, req)
		require.ErrorIs(t, err, errs.ErrNotAcquired)
		_, abandoned := held.seen()
		require.Len(t, abandoned, 1, "a failed TryLock is abandoned once")
		assert.ErrorIs(t, abandoned[0], errs.ErrNotAcquired)

		waited := &recorded{try: newMock("other", long).try("me")}
		req = request(hub, channelOf(t), nil)
		req.Attempt, req.Wait = waited, 50*time.Millisecond
		require.ErrorIs(t, do(ctx, req), errs.ErrNotAcquired)
		_, abandoned = waited.seen()
		require.Len(t, abandoned, 1, "a wait that timed out is abandoned once")

		free := &recorded{try: newMock("", long).try("me")}
		req = request(hub, channelOf(t), nil)
		req.Attempt = free
		require.NoError(t, do(ctx, req))
		_, abandoned = free.seen()
		assert.Empty(t, abandoned, "an acquisition that succeeded is not abandoned")
	})
}

// Only a try made at the head of the local queue is told so: the first
// try, made before queueing, is not; the head's tries after joining are.
func TestOnlyTheHeadTriesAtHead(t *testing.T) {
	t.Parallel()
	redistest.ForBackends(t, func(t *testing.T, env *redistest.Env) {
		ctx := testContext(t)
		hub := core.For(conn.Of(env.Client))
		m := newMock("other", long)
		a := &recorded{try: m.try("me")}
		req := request(hub, channelOf(t), nil)
		req.Attempt = a
		done := start(ctx, req)
		// The first try, then the one made once subscribed.
		require.Eventually(t, func() bool { h, _ := a.seen(); return len(h) >= 2 }, settle, poll)
		m.set("")
		hub.Release(channelOf(t))
		require.NoError(t, await(t, done, "the waiter"))
		atHead, _ := a.seen()
		assert.False(t, atHead[0], "the first try runs before queueing")
		for i, h := range atHead[1:] {
			assert.True(t, h, "try %d, made in the queue, runs at its head", i+2)
		}
	})
}
