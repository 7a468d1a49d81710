package redistest

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestHeaderListsEachKeyAndArgumentInOrder(t *testing.T) {
	src := `-- Release a lock.
--
-- KEYS[1]  the lock hash
-- KEYS[2]  the channel, redisson_lock__channel:{<name>}
--          (continued)
-- ARGV[1]  owner id
-- ARGV[2]  lease in milliseconds, as KEYS[1] keeps it
-- ARGV[3], ARGV[4], ...  the readers: owner id, then lease
--          in ms, each
--
-- Returns 1.
local a = KEYS[1] -- ARGV[9]  not a header line
`
	keys, args := luaHeader(src)
	require.Equal(t, []string{"the lock hash", "the channel, redisson_lock__channel:{<name>} (continued)"}, keys)
	require.Equal(t, []string{"owner id", "lease in milliseconds, as KEYS[1] keeps it"}, args)
}

func TestHeaderLeavesOutStridesAndShowsGaps(t *testing.T) {
	keys, args := luaHeader("-- KEYS[s*i-s+1]  the lock hash of lease i\n-- KEYS[2]  a key\n-- ARGV[2i]  owner id\n")
	require.Equal(t, []string{"", "a key"}, keys, "KEYS[1] is missing")
	require.Empty(t, args)
}

func TestHeaderOfNoHeaderIsEmpty(t *testing.T) {
	keys, args := luaHeader("return redis.call('GET', KEYS[1])\n")
	require.Empty(t, keys)
	require.Empty(t, args)
}
