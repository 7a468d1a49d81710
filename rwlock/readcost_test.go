package rwlock_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/testkit/redistest"
	"github.com/relock-go/relock/rwlock"
)

// TestReadCostsTheSameHoweverManyRead: a read acquisition does not look at
// the other readers (only a writer's try must purge the dead ones), so
// with 50 readers holding the lock the 51st runs no command per reader:
// no HGETALL of the hash, no EXISTS or PTTL of their lease keys (counted
// with INFO commandstats on a real redis-server: calls, not time). A
// crashed reader still ends with its lease for writers:
// TestCrashedReaderLeaseEnds.
func TestReadCostsTheSameHoweverManyRead(t *testing.T) {
	env := redistest.Backends()[1].New(t) // miniredis keeps no commandstats
	ctx := ctxT(t)
	rw := rwlock.New(env.Client, "many-readers")
	for i := range 50 {
		held, err := rw.RLock(as(ctx, fmt.Sprintf("reader-%02d", i)))
		require.NoError(t, err)
		t.Cleanup(func() { _ = rw.RUnlock(held) })
	}
	require.NoError(t, env.Client.ConfigResetStat(ctx).Err())
	held, err := rw.RLock(as(ctx, "reader-50"))
	require.NoError(t, err)
	calls, err := redistest.CommandCounts(ctx, env.Client)
	require.NoError(t, err)
	for _, perReader := range []string{"hgetall", "exists", "pttl"} {
		require.LessOrEqual(t, calls[perReader], 1, "%s per reader: %v", perReader, calls)
	}
	require.NoError(t, rw.RUnlock(held))
}
