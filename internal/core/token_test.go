package core

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Token and TokenOf answer only for a hold that has not ended.
func TestTokenOnlyWhileLive(t *testing.T) {
	wd, clk, c := setup(t)
	key := NewKey(ClientOf(c), "test", "k", "")
	stop := func(_ context.Context, h *Hold) error { h.Lease.Stop(); return nil }
	requireToken := func(ctx context.Context, want bool, why string) {
		t.Helper()
		_, ok := Token(ctx)
		require.Equal(t, want, ok, "Token: %s", why)
		_, ok = TokenOf(ctx, key)
		require.Equal(t, want, ok, "TokenOf: %s", why)
	}

	ctx := start(t, context.Background(), key, &Hold{Token: 7, Lease: Lease(wd, spec(c, "a"), false, false, clk.Now())}, stop)
	requireToken(ctx, true, "live")
	require.NoError(t, End(ctx, key, nil))
	requireToken(ctx, false, "released")

	ctx = start(t, context.Background(), key, &Hold{Token: 8, Lease: Lease(wd, spec(c, "b"), false, false, clk.Now())}, stop)
	clk.Advance(2 * time.Second) // past the lease, before the wheel turns
	requireToken(ctx, false, "lapsed")

	ctx = start(t, context.Background(), key, &Hold{Token: 9, Lease: Lease(wd, spec(c, "c"), false, false, clk.Now())}, stop)
	h, _, err := Detach(ctx, key, nil)
	require.NoError(t, err)
	h.Close()
	h.Lease.Stop()
	requireToken(ctx, false, "detached")

	ctx = start(t, context.Background(), key, &Hold{Lease: Lease(wd, spec(c, "d"), false, false, clk.Now())}, stop)
	requireToken(ctx, false, "a hold without a token")
	require.NoError(t, End(ctx, key, nil))

	var none context.Context
	requireToken(none, false, "nil context")
	requireToken(context.Background(), false, "no hold")
}
