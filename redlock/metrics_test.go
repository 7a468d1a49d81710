package redlock_test

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/telemetry/telemetrytest"
	"github.com/relock-go/relock/internal/testkit/redistest"
	"github.com/relock-go/relock/lock"
	"github.com/relock-go/relock/redlock"
	"github.com/relock-go/relock/tracing"
)

func TestMetricNodesWon(t *testing.T) {
	ctx := ctxT(t)
	cs := make([]*redis.Client, 3)
	for i := range cs {
		_, cs[i] = redistest.Miniredis(t)
	}
	// Member 0 is held by someone else.
	other, err := lock.New(cs[0], "m:rl").Lock(ctx)
	require.NoError(t, err)
	defer func() { require.NoError(t, lock.New(cs[0], "m:rl").Unlock(other)) }()

	r := telemetrytest.New(t)
	rl := redlock.New(mutexes(cs, "m:rl"), redlock.WithMeterProvider(r.Provider))
	held, err := rl.Lock(ctx)
	require.NoError(t, err)
	_, err = redlock.New(mutexes(cs, "m:rl"), redlock.WithMeterProvider(r.Provider)).TryLock(context.Background())
	require.ErrorIs(t, err, redlock.ErrNotAcquired)
	require.NoError(t, rl.Unlock(held))

	m, ok := r.Metric(t, tracing.MetricRedlockNodesWon)
	require.True(t, ok)
	require.Equal(t, "{node}", m.Unit)
	prim := tracing.Primitive.String("redlock")
	won := r.IntHist(t, tracing.MetricRedlockNodesWon, prim, tracing.QuorumReached.Bool(true))
	require.Len(t, won, 1)
	require.EqualValues(t, 1, won[0].Count)
	require.EqualValues(t, 2, won[0].Sum, "members 1 and 2")
	lost := r.IntHist(t, tracing.MetricRedlockNodesWon, prim, tracing.QuorumReached.Bool(false))
	require.Len(t, lost, 1)
	require.EqualValues(t, 1, lost[0].Count)
	require.EqualValues(t, 0, lost[0].Sum, "every member held")

	require.EqualValues(t, 1, r.Sum(t, tracing.MetricAcquisitions, prim, tracing.Outcome.String(tracing.OutcomeAcquired)))
	require.EqualValues(t, 1, r.Sum(t, tracing.MetricAcquisitions, prim, tracing.Outcome.String(tracing.OutcomeNotAcquired)))
	n, _ := r.Hist(t, tracing.MetricHoldDuration, prim, tracing.HoldEnd.String(tracing.EndReleased))
	require.EqualValues(t, 1, n)
	require.EqualValues(t, 0, r.Sum(t, tracing.MetricHeld, prim))
}
