package owner

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestWithAndFrom(t *testing.T) {
	ctx := context.Background()
	_, ok := From(ctx)
	require.False(t, ok)

	id := Mint()
	require.True(t, strings.HasPrefix(id, ProcessID()+":"))
	got, ok := From(With(ctx, id))
	require.True(t, ok)
	require.Equal(t, id, got)

	_, ok = From(With(ctx, ""))
	require.False(t, ok, "an empty owner is no owner")
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
