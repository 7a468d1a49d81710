package rwlock_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
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

// TestDeadOwnEntryIsNoReentry: a read acquisition whose owner's entry in
// the hash is dead (all its lease keys expired: a lost hold) does not count
// on from it. Were it a re-entry, it would pass the writer waiting in
// line; it waits behind the writer, as any new reader, and the dead entry
// is gone.
func TestDeadOwnEntryIsNoReentry(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		const name = "dead-own-entry"
		u := env.Universal
		rw := rwlock.New(u, name)
		live, err := rw.RLock(as(ctx, "r"))
		require.NoError(t, err)
		// o held two reads whose lease keys are gone; a writer waits.
		require.NoError(t, u.HSet(ctx, name, "o", 2).Err())
		now, err := u.Time(ctx).Result()
		require.NoError(t, err)
		require.NoError(t, u.ZAdd(ctx, "{"+name+"}:rwlock_write_waiters", redis.Z{Score: float64(now.Add(time.Minute).UnixMilli()), Member: "w:write"}).Err())

		_, err = rw.TryRLock(as(ctx, "o"))
		require.ErrorIs(t, err, rwlock.ErrNotAcquired, "a new reader waits behind the writer")
		n, err := u.HExists(ctx, name, "o").Result()
		require.NoError(t, err)
		require.False(t, n, "the dead entry was dropped")
		require.NoError(t, rw.RUnlock(live))
	})
}
