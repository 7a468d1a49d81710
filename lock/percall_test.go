package lock_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/relock-go/relock/internal/testkit/redistest"
	"github.com/relock-go/relock/lock"
)

// Lock's options are this acquisition's own: its lease, its wait bound,
// a hold scoped to its context; what configures the Mutex is refused.
func TestPerCallOptions(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		mu := lock.New(env.Universal, "pc") // renewed by the watchdog

		fixed, err := mu.Lock(ctx, lock.WithLeaseTime(5*time.Second))
		require.NoError(t, err)
		ttl, err := mu.TTL(ctx)
		require.NoError(t, err)
		require.True(t, ttl > 4*time.Second && ttl <= 5*time.Second, "ttl %v", ttl)
		require.NoError(t, mu.Extend(fixed, 6*time.Second), "a fixed lease: Extend applies")
		require.NoError(t, mu.Unlock(fixed))

		fixedByNew := lock.New(env.Universal, "pc:fixed", lock.WithLeaseTime(5*time.Second))
		renewed, err := fixedByNew.Lock(ctx, lock.WithWatchdogTimeout(2*time.Second))
		require.NoError(t, err)
		ttl, _ = fixedByNew.TTL(ctx)
		require.True(t, ttl <= 2*time.Second, "ttl %v", ttl)
		require.ErrorIs(t, fixedByNew.Extend(renewed, time.Minute), lock.ErrInvalidArgument, "renewed by the watchdog")
		require.NoError(t, fixedByNew.Unlock(renewed))

		held, err := mu.Lock(ctx)
		require.NoError(t, err)
		other := lock.NewOwner(ctx)
		began := time.Now()
		_, err = mu.Lock(other, lock.WithWaitTimeout(50*time.Millisecond))
		require.ErrorIs(t, err, lock.ErrNotAcquired)
		require.Less(t, time.Since(began), 10*time.Second, "the per-call wait bound ended the wait")
		require.NoError(t, mu.Unlock(held))

		scope, cancel := context.WithCancel(ctx)
		scoped, err := mu.Lock(scope, lock.WithHoldScopedToContext())
		require.NoError(t, err)
		cancel()
		<-scoped.Done()
		require.Eventually(t, func() bool { n, _ := env.Universal.Exists(ctx, "pc").Result(); return n == 0 },
			5*time.Second, 5*time.Millisecond, "a scoped hold is released when its context ends")

		_, err = mu.Lock(ctx, lock.WithLeaseTime(0))
		require.ErrorIs(t, err, lock.ErrInvalidArgument)
		_, err = mu.TryLock(ctx, lock.WithLeaseTime(0))
		require.ErrorIs(t, err, lock.ErrInvalidArgument)
		require.Contains(t, err.Error(), "lease time 0s")
		// What configures the Mutex is not a LockOption: Lock does not
		// compile with it.
		for _, o := range []lock.Option{lock.WithTracerProvider(noop.NewTracerProvider()), lock.WithUnlockTimeout(time.Second),
			lock.WithWatchdog(nil), lock.WithReplicaSync(0), lock.WithMinReplicas(1), lock.WithMeterProvider(nil), lock.WithNameInMetrics()} {
			_, perCall := o.(lock.LockOption)
			require.False(t, perCall, "%T", o)
		}
		require.Equal(t, int64(0), env.Universal.Exists(ctx, "pc").Val(), "nothing written")
	})
}
