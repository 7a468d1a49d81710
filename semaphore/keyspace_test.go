package semaphore_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/testkit/redistest"
	"github.com/relock-go/relock/semaphore"
	"github.com/relock-go/relock/watchdog"
)

// TestKeyspaceBounded acquires and releases permits of many distinct
// semaphores (several at once, with a waiter that gave up, a permit whose
// lease lapsed before its Release, a holder that never released): when no
// permit is held and nobody waits nothing is left but unlock latches, and
// what a crashed holder leaves expires with its lease.
func TestKeyspaceBounded(t *testing.T) {
	each(t, func(t *testing.T, env *env) {
		ctx := ctxT(t)
		const names = 200
		const lease = 300 * time.Millisecond
		// A watchdog whose clock stands still: a lapsed permit is known
		// to Redis only, as after a pause.
		still := watchdog.New(watchdog.WithClock(watchdog.NewFakeClock(time.Now())))
		var lapsed []*semaphore.Semaphore
		var lapsedHolds []func() error
		for i := range names {
			name := fmt.Sprintf("exports:%d", i)
			s := semaphore.New(env.Universal, name, 3)
			switch i % 4 {
			case 0:
				a, err := s.Acquire(ctx, 2)
				require.NoError(t, err)
				b, err := s.Acquire(ctx, 1)
				require.NoError(t, err)
				require.NoError(t, s.Release(b))
				require.NoError(t, s.Release(a))
			case 1: // a waiter that gave up, its mark withdrawn
				a, err := s.Acquire(ctx, 3)
				require.NoError(t, err)
				_, err = semaphore.New(env.Universal, name, 3, semaphore.WithWaitTimeout(20*time.Millisecond)).Acquire(ctx, 1)
				require.ErrorIs(t, err, semaphore.ErrNotAcquired)
				require.NoError(t, s.Release(a))
			case 2: // the lease lapses on the server before the Release
				l := semaphore.New(env.Universal, name, 3, semaphore.WithLeaseTime(lease), semaphore.WithWatchdog(still))
				a, err := l.Acquire(ctx, 1)
				require.NoError(t, err)
				lapsed = append(lapsed, l)
				lapsedHolds = append(lapsedHolds, func() error { return l.Release(a) })
			case 3:
				a, err := s.TryAcquire(ctx, 3)
				require.NoError(t, err)
				require.NoError(t, s.Release(a))
			}
		}
		// A crashed holder (it releases only after the check): its keys
		// expire with its lease.
		crashed := semaphore.New(env.Universal, "crashed", 3, semaphore.WithLeaseTime(lease), semaphore.WithWatchdog(still))
		crashedHold, err := crashed.Acquire(ctx, 2)
		require.NoError(t, err)
		// The keys of a held permit live as long as its lease, and at most
		// semaphore.KeySlack more (spared most PEXPIREs); latches live
		// three times the unlock timeout.
		for _, k := range redistest.RequireBoundedKeyspace(t, ctx, env.Universal, time.Minute) {
			if !strings.HasPrefix(k.Key, "redisson_unlock_latch:") {
				require.LessOrEqual(t, k.TTL, lease+semaphore.KeySlack, k.Key)
			}
		}

		env.advance(lease + semaphore.KeySlack + 50*time.Millisecond)
		for i, release := range lapsedHolds {
			require.ErrorIs(t, release(), semaphore.ErrLockLost, lapsed[i].Name())
		}
		left := redistest.RequireBoundedKeyspace(t, ctx, env.Universal, time.Minute)
		for _, k := range left {
			if !strings.HasPrefix(k.Key, "redisson_unlock_latch:") {
				t.Errorf("key %s (ttl %v) left after every permit ended", k.Key, k.TTL)
			}
		}
		require.ErrorIs(t, crashed.Release(crashedHold), semaphore.ErrLockLost)
	})
}
