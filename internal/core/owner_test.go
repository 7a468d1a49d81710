package core

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestWithAndFrom(t *testing.T) {
	ctx := context.Background()
	_, ok := pinnedOwner(ctx)
	require.False(t, ok)

	id := Mint()
	require.True(t, strings.HasPrefix(id, ProcessID()+":"))
	got, ok := pinnedOwner(WithOwner(ctx, id))
	require.True(t, ok)
	require.Equal(t, id, got)

	_, ok = pinnedOwner(WithOwner(ctx, ""))
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
