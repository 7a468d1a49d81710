package semaphore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/testkit/redistest"
	"github.com/relock-go/relock/semaphore"
)

// lineUp puts waiters in the semaphore's line by hand, in order, each
// with its mark's expiry relative to the server's time (ms; negative:
// lapsed), as processes that queued and then died or kept waiting leave
// them.
func lineUp(t *testing.T, env *env, name string, ids []string, markMs []int64) {
	t.Helper()
	ctx := context.Background()
	now := env.serverNow(t).UnixMilli()
	latest := int64(0)
	for i, id := range ids {
		require.NoError(t, env.Universal.ZAdd(ctx, "{"+name+"}:waiters", redis.Z{Score: float64(now + int64(i)), Member: id}).Err())
		require.NoError(t, env.Universal.HSet(ctx, "{"+name+"}:waiter_expiry", id, now+markMs[i]).Err())
		latest = max(latest, markMs[i])
	}
	// As an acquire that marks its waiter leaves them: expiring after the
	// latest mark.
	for _, k := range []string{"{" + name + "}:waiters", "{" + name + "}:waiter_expiry"} {
		require.NoError(t, env.Universal.PExpire(ctx, k, time.Duration(latest)*time.Millisecond).Err())
	}
}

func waitersOf(t *testing.T, env *env, name string) []string {
	t.Helper()
	w, err := env.Universal.ZRange(context.Background(), "{"+name+"}:waiters", 0, -1).Result()
	require.NoError(t, err)
	return w
}

// TestLapsedWaiterDroppedAtTheHead: a waiter whose mark lapsed (its
// process died) holds nobody back while a live waiter is ahead of it, and
// is dropped, mark and place, once it reaches the head, so that the live
// waiter behind it is next.
func TestLapsedWaiterDroppedAtTheHead(t *testing.T) {
	each(t, func(t *testing.T, env *env) {
		ctx := ctxT(t)
		const name = "lapsed-at-head"
		s := semaphore.New(env.Universal, name, 1)
		h, err := s.Acquire(ctx, 1)
		require.NoError(t, err)
		lineUp(t, env, name, []string{"live-1", "dead", "live-2"}, []int64{60_000, -1_000, 60_000})

		require.NoError(t, s.Release(h))
		_, err = s.TryAcquire(ctx, 1)
		require.ErrorIs(t, err, semaphore.ErrNotAcquired, "live-1 is first in line")
		require.Equal(t, "live-1", waitersOf(t, env, name)[0])

		// live-1 is served elsewhere (it leaves the line); the dead waiter
		// is now at the head and is dropped by the next script.
		require.NoError(t, env.Universal.ZRem(ctx, "{"+name+"}:waiters", "live-1").Err())
		require.NoError(t, env.Universal.HDel(ctx, "{"+name+"}:waiter_expiry", "live-1").Err())
		_, err = s.TryAcquire(ctx, 1)
		require.ErrorIs(t, err, semaphore.ErrNotAcquired, "live-2 is first in line now")
		require.Equal(t, []string{"live-2"}, waitersOf(t, env, name))
		exp, err := env.Universal.HGetAll(ctx, "{"+name+"}:waiter_expiry").Result()
		require.NoError(t, err)
		require.NotContains(t, exp, "dead", "the dead waiter's mark goes with its place")

		require.NoError(t, env.Universal.ZRem(ctx, "{"+name+"}:waiters", "live-2").Err())
		require.NoError(t, env.Universal.HDel(ctx, "{"+name+"}:waiter_expiry", "live-2").Err())
		held, err := s.TryAcquire(ctx, 1)
		require.NoError(t, err, "nobody waits")
		require.NoError(t, s.Release(held))
	})
}

// TestLineLengthCostsNothing: a script of the semaphore does not read
// every waiter's mark. With 500 waiters queued behind a live head, a
// release and a try run a few dozen Redis calls, not hundreds (counted by
// INFO commandstats on a real redis-server: calls, not time), and the
// keys still expire after the latest mark.
// (miniredis keeps no commandstats; the cluster routes a name to one
// master, which is a redis-server like this one.)
func TestLineLengthCostsNothing(t *testing.T) {
	env := newEnv(t, redistest.Backends()[1])
	{
		ctx := ctxT(t)
		const name = "long-line"
		s := semaphore.New(env.Universal, name, 1)
		h, err := s.Acquire(ctx, 1)
		require.NoError(t, err)
		ids := make([]string, 500)
		marks := make([]int64, 500)
		for i := range ids {
			ids[i], marks[i] = fmt.Sprintf("w%03d", i), 60_000
		}
		marks[len(marks)-1] = 120_000 // the latest mark: the keys live as long
		lineUp(t, env, name, ids, marks)

		require.NoError(t, env.Client.ConfigResetStat(ctx).Err())
		require.NoError(t, s.Release(h))
		_, err = s.TryAcquire(ctx, 1)
		require.ErrorIs(t, err, semaphore.ErrNotAcquired)
		calls, err := redistest.CommandCounts(ctx, env.Client)
		require.NoError(t, err)
		total := 0
		for cmd, n := range calls {
			switch cmd {
			case "evalsha", "eval", "info", "config|resetstat":
			default:
				total += n // the scripts' own calls
			}
		}
		require.Less(t, total, 60, "calls made by a release and a try with 500 waiters in line: %v", calls)
		for _, whole := range []string{"hgetall", "hvals", "hkeys"} {
			require.Zero(t, calls[whole], "%s reads every waiter's mark", whole)
		}
		require.Len(t, waitersOf(t, env, name), 500)
		for _, k := range []string{name, "{" + name + "}:waiters", "{" + name + "}:waiter_expiry"} {
			ttl, err := env.Universal.PTTL(ctx, k).Result()
			require.NoError(t, err)
			require.Greater(t, ttl.Milliseconds(), int64(60_000), "%s outlives the latest mark", k)
		}
	}
}

// TestMarksExpireWithTheLatestMark: the line of waiters and their marks
// expire with the latest mark (at most 3 s after its waiter's last try),
// not with a permit's lease (30 s here), which keeps the semaphore's other
// keys: a waiter that died leaves its mark no longer.
func TestMarksExpireWithTheLatestMark(t *testing.T) {
	each(t, func(t *testing.T, env *env) {
		ctx := ctxT(t)
		const name = "marks-expire"
		s := semaphore.New(env.Universal, name, 1)
		h, err := s.Acquire(ctx, 1)
		require.NoError(t, err)
		wctx, cancel := context.WithCancel(ctx)
		waiting := acquireAsync(semaphore.New(env.secondClient(t), name, 1), wctx, 1)
		require.Eventually(t, func() bool { return marks(t, env.Universal, name) == 1 }, 5*time.Second, 5*time.Millisecond)

		for _, k := range []string{"{" + name + "}:waiters", "{" + name + "}:waiter_expiry"} {
			ttl, err := env.Universal.PTTL(ctx, k).Result()
			require.NoError(t, err)
			require.Greater(t, ttl, time.Duration(0), "%s has a TTL", k)
			require.LessOrEqual(t, ttl, 3*time.Second, "%s lives as long as the latest mark", k)
		}
		ttl, err := env.Universal.PTTL(ctx, name).Result()
		require.NoError(t, err)
		require.Greater(t, ttl, 20*time.Second, "the permit's lease keeps the semaphore")

		cancel()
		require.Error(t, (<-waiting).err)
		require.NoError(t, s.Release(h))
	})
}
