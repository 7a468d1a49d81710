package conn

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSlot(t *testing.T) {
	// Reference values from the Redis Cluster specification / CLUSTER KEYSLOT.
	require.Equal(t, 12739, Slot("123456789"))
	require.Equal(t, 12182, Slot("foo"))
	require.Equal(t, Slot("foo"), Slot("{foo}bar"))
	require.Equal(t, Slot("order:1"), Slot("redisson_lock__channel:{order:1}"))
	require.Equal(t, Slot("a{}b"), Slot("a{}b"))
	require.NotEqual(t, Slot("{}a"), Slot("{}b"), "an empty tag hashes the whole key")
}
