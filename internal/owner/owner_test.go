package owner

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestEnsureMintsOnceAndKeeps(t *testing.T) {
	ctx := context.Background()
	_, ok := From(ctx)
	require.False(t, ok)

	ctx1, id1 := Ensure(ctx)
	require.True(t, strings.HasPrefix(id1, ProcessID()+":"))
	got, ok := From(ctx1)
	require.True(t, ok)
	require.Equal(t, id1, got)

	ctx2, id2 := Ensure(ctx1)
	require.Equal(t, id1, id2, "an owner already in ctx is kept")
	require.Equal(t, ctx1, ctx2)

	_, id3 := Ensure(ctx)
	require.NotEqual(t, id1, id3, "two fresh contexts are two owners")
}

func TestMintUnique(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		id := Mint()
		require.False(t, seen[id])
		seen[id] = true
	}
}

func TestRequestKeyIsPrefixedUniqueRequestID(t *testing.T) {
	a, b := RequestKey("latch:"), RequestKey("latch:")
	require.NotEqual(t, a, b)
	require.True(t, strings.HasPrefix(a, "latch:"+ProcessID()+":r"))
	long := strings.Repeat("x", 300) // longer than the stack buffer
	require.True(t, strings.HasPrefix(RequestKey(long), long+ProcessID()+":r"))
}
