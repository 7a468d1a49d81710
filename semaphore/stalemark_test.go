package semaphore_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/semaphore"
)

// TestStaleMarkHoldsOthersBackBriefly: a waiter that gives up without
// taking its mark back (its client is gone, as Redis would be in a
// partition) leaves the mark at the head of the queue. The waiters behind
// it must get in a few seconds after the permits free, not a lease (30 s)
// later: a mark lives min(lease, 3 s) unless its waiter refreshes it.
func TestStaleMarkHoldsOthersBackBriefly(t *testing.T) {
	each(t, func(t *testing.T, env *env) {
		ctx := ctxT(t)
		const name = "stale-mark"
		holder := semaphore.New(env.Universal, name, 1)
		h, err := holder.Acquire(ctx, 1)
		require.NoError(t, err)

		gone := env.secondClient(t)
		first := acquireAsync(semaphore.New(gone, name, 1), ctx, 1)
		require.Eventually(t, func() bool { return marks(t, env.Universal, name) == 1 }, 5*time.Second, 5*time.Millisecond)
		require.NoError(t, gone.Close()) // its waiter cannot take the mark back
		r := <-first
		require.Error(t, r.err)
		require.EqualValues(t, 1, marks(t, env.Universal, name), "the mark is left behind")

		behind := semaphore.New(env.secondClient(t), name, 1)
		second := acquireAsync(behind, ctx, 1)
		require.NoError(t, holder.Release(h))
		env.advance(3*time.Second + 500*time.Millisecond) // the stale mark's life
		start := time.Now()
		select {
		case r := <-second:
			require.NoError(t, r.err)
			t.Logf("the waiter behind the stale mark got in %v after its life ended", time.Since(start))
			require.NoError(t, behind.Release(r.ctx))
		case <-time.After(5 * time.Second):
			w, _ := env.Universal.ZRangeWithScores(ctx, "{"+name+"}:waiters", 0, -1).Result()
			e, _ := env.Universal.HGetAll(ctx, "{"+name+"}:waiter_expiry").Result()
			t.Fatalf("the waiter behind a stale mark still waits; server time %v, waiters %v, expiry %v", env.serverNow(t).UnixMilli(), w, e)
		}
	})
}
