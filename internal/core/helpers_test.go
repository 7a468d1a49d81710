package core_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/core"
)

const (
	// wakeTimeout bounds every wait for a wake-up: generous, since the
	// machine may be slow and -race slows it further.
	wakeTimeout = 10 * time.Second
	// settle bounds the waits for server-side state (NUMSUB, CLIENT LIST)
	// and for the linger to pass.
	settle = 15 * time.Second
	poll   = 10 * time.Millisecond
)

func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// chanName is a channel named as the lock package names them.
func chanName(t *testing.T, i int) string {
	return fmt.Sprintf("redisson_lock__channel:{%s:%d}", t.Name(), i)
}

// join queues a waiter and makes sure it leaves at the end of the test, so
// the hub's connection closes and no goroutine outlives the test.
func join(t *testing.T, ctx context.Context, h *core.Hub, channel string, shared bool) *core.Waiter {
	t.Helper()
	w, err := h.Join(ctx, channel, shared)
	require.NoError(t, err)
	require.NotNil(t, w)
	t.Cleanup(func() { w.Leave(false, 0) })
	return w
}

func requireWoken(t *testing.T, w *core.Waiter, what string) {
	t.Helper()
	select {
	case <-w.Wake():
	case <-time.After(wakeTimeout):
		t.Fatalf("%s: not woken within %v", what, wakeTimeout)
	}
}

// requireNotSignalled checks without blocking that w has no pending wake-up.
// It is used right after an event whose wake-ups are all sent before the
// call that caused them returns (Leave, Release), or after another waiter
// woken by the same delivery was seen woken (the hub signals every head
// of a delivery under one lock), so it is exact, not a timing guess.
func requireNotSignalled(t *testing.T, w *core.Waiter, what string) {
	t.Helper()
	select {
	case <-w.Wake():
		t.Fatalf("%s: woken, want not", what)
	default:
	}
}

func requireTake(t *testing.T, w *core.Waiter, kick bool, hint time.Duration, what string) {
	t.Helper()
	gotKick, gotHint := w.Take()
	require.Equal(t, kick, gotKick, "%s: Take kick", what)
	require.Equal(t, hint, gotHint, "%s: Take hint", what)
}

// claimant is a hand-off's receiving side that records nothing: the hub
// only carries it.
type claimant string

func (claimant) Granted(core.Grant) {}
func (claimant) Discard(core.Grant) {}

func (claimant) Declines(context.Context) bool { return false }

// joined is what a Join run on its own goroutine returned.
type joined struct {
	w   *core.Waiter
	err error
}
