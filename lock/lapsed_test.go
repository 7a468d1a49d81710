package lock_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/codes"

	"github.com/relock-go/relock/internal/telemetry/telemetrytest"
	"github.com/relock-go/relock/internal/testkit/redistest"
	"github.com/relock-go/relock/lock"
	"github.com/relock-go/relock/tracing"
	"github.com/relock-go/relock/watchdog"
)

// lapse is a client whose acquire scripts (the lock's ScriptSources
// named) can be made to answer after their lease lapsed, and the watchdog
// whose fake clock that moves.
type lapse struct {
	clk  *watchdog.FakeClock
	wd   *watchdog.Watchdog
	c    redis.UniversalClient
	hook *redistest.ScriptFaults
}

func newLapse(t *testing.T, env *redistest.Env, scripts ...string) lapse {
	l := lapse{clk: redistest.FakeClock(t)}
	l.wd = watchdog.New(watchdog.WithClock(l.clk))
	preload(t, env.Universal) // the hook's next call is the script's run, not a NOSCRIPT
	var srcs []string
	for _, name := range scripts {
		srcs = append(srcs, lock.ScriptSources()[name])
	}
	l.hook = redistest.NewScriptFaults(srcs...)
	l.c = env.NewClient(t)
	l.c.AddHook(l.hook)
	return l
}

// arm moves the clock past the 30 s lease once the next hooked script
// has run, before its reply arrives.
func (l lapse) arm() { l.hook.AfterNext(func() { l.clk.Advance(time.Minute) }) }

// TestGrantLapsedOnArrivalRefused: a grant whose reply comes after its
// lease has lapsed (the watchdog's clock moved past the lease between the
// script's run and its reply) may overlap the next holder's, so Lock
// refuses it with ErrLockLost, naming the operation and the lock, and
// gives the lock back at once rather than leaving it taken until its key
// expires.
func TestGrantLapsedOnArrivalRefused(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		for _, fair := range []bool{false, true} {
			ctx := ctxT(t)
			name := fmt.Sprintf("lapsed:%t", fair)
			l := newLapse(t, env, "acquire", "fair_acquire")
			mu := lock.New(l.c, name, lock.WithWatchdog(l.wd))
			if fair {
				mu = lock.NewFair(l.c, name, lock.WithWatchdog(l.wd))
			}
			l.arm()
			_, err := mu.Lock(ctx)
			require.ErrorIs(t, err, lock.ErrLockLost, "fair %t", fair)
			require.ErrorContains(t, err, fmt.Sprintf("lock %q", name))
			require.ErrorContains(t, err, "lapsed before the grant's reply arrived")
			require.Equal(t, int32(1), l.hook.Seen.Load(), "fair %t: refused without a second try", fair)
			require.Zero(t, env.Universal.Exists(ctx, name).Val(), "fair %t: given back", fair)
			require.Zero(t, l.wd.Stats().Held, "fair %t: the watchdog keeps nothing", fair)

			held, err := mu.TryLock(ctx)
			require.NoError(t, err, "fair %t: free for the next owner", fair)
			require.NoError(t, mu.Unlock(held))
		}
	})
}

// TestReentryLapsedOnArrivalEndsTheHold: a re-entry whose grant came after
// the lease had lapsed shares that lease with the outer hold, so both are
// lost. The re-entry's count is left to expire with the outer one: giving
// back one count would renew a key that nobody holds any more.
func TestReentryLapsedOnArrivalEndsTheHold(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		const name = "lapsed:reentry"
		l := newLapse(t, env, "acquire")
		mu := lock.New(l.c, name, lock.WithWatchdog(l.wd))
		outer, err := mu.Lock(ctx)
		require.NoError(t, err)

		l.arm()
		// On a context that does not end with the hold, so that the
		// acquisition does not see the loss before its reply (a late try,
		// given back by the loop) and Start is what refuses it.
		_, err = mu.Lock(context.WithoutCancel(outer))
		require.ErrorIs(t, err, lock.ErrLockLost)
		require.ErrorContains(t, err, "lapsed before the grant's reply arrived")
		require.ErrorIs(t, context.Cause(outer), lock.ErrLockLost, "the outer hold is lost with its lease")
		require.ErrorIs(t, mu.Unlock(outer), lock.ErrLockLost)
		require.Equal(t, "2", env.Universal.HGet(ctx, name, ownerField(t, env.Universal, name)).Val(),
			"both counts left to expire")
		require.Zero(t, l.wd.Stats().Held)
	})
}

// TestGrantLapsedOnArrivalIsRecordedAsItsError: the acquisition whose
// grant was refused for a lapsed lease is recorded as the failure its
// caller got, on its span and in the acquisition metrics, not as
// acquired; no hold is counted.
func TestGrantLapsedOnArrivalIsRecordedAsItsError(t *testing.T) {
	eachSingle(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		spans, tp := spanRecorder(t)
		metrics := telemetrytest.New(t)
		l := newLapse(t, env, "acquire")
		mu := lock.New(l.c, "lapsed:recorded", lock.WithWatchdog(l.wd),
			lock.WithTracerProvider(tp), lock.WithMeterProvider(metrics.Provider))
		l.arm()
		_, err := mu.Lock(ctx)
		require.ErrorIs(t, err, lock.ErrLockLost)

		ended := spans.Ended()
		require.Len(t, ended, 1, "the acquire span alone: no hold, so no release span")
		a := attrs(ended[0].Attributes())
		require.Equal(t, tracing.OutcomeError, a[tracing.Outcome].AsString())
		require.Equal(t, codes.Error, ended[0].Status().Code)
		require.Contains(t, ended[0].Status().Description, "lapsed before the grant's reply arrived")

		outError := tracing.Outcome.String(tracing.OutcomeError)
		require.EqualValues(t, 1, metrics.Sum(t, tracing.MetricAcquisitions, primLock, outError))
		require.Zero(t, metrics.Sum(t, tracing.MetricAcquisitions, primLock, outAcquired))
	})
}
