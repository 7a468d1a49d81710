package semaphore_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/testkit/redistest"
	"github.com/relock-go/relock/semaphore"
)

// TestFullServerKeepsPermitsRefusesNew: on a server at its maxmemory with
// noeviction, the permits already held are renewed lease after lease (a
// renewal adds nothing), every new acquisition fails with Redis's OOM and
// writes nothing, and a release still works. Only a real redis-server
// has maxmemory.
func TestFullServerKeepsPermitsRefusesNew(t *testing.T) {
	srv := redistest.StartServer(t)
	c := srv.Client(t)
	ctx := ctxT(t)
	const name, lease = "full", time.Second
	s := semaphore.New(c, name, 3, semaphore.WithWatchdogTimeout(lease))
	var helds []context.Context
	for range 2 {
		held, err := s.Acquire(ctx, 1)
		require.NoError(t, err)
		helds = append(helds, held)
	}
	before := semaphoreState(t, c, name)
	require.NoError(t, c.ConfigSet(ctx, "maxmemory", "1").Err())
	t.Cleanup(func() { _ = c.ConfigSet(context.Background(), "maxmemory", "0").Err() })

	time.Sleep(3 * lease)
	lost := 0
	for _, h := range helds {
		if h.Err() != nil {
			lost++
			t.Logf("hold lost: %v", context.Cause(h))
		}
	}
	t.Logf("holds lost over 3 leases at maxmemory: %d of %d", lost, len(helds))
	assert.Zero(t, lost)

	other := semaphore.New(srv.Client(t), name, 3, semaphore.WithWaitTimeout(time.Second))
	_, err := other.TryAcquire(ctx, 1)
	assert.ErrorContains(t, err, "OOM", "a new permit on a full server")
	_, err = other.Acquire(ctx, 1)
	assert.ErrorContains(t, err, "OOM", "a new permit on a full server")
	t.Logf("a new Acquire on a full server: %v", err)
	_, err = semaphore.New(c, "full:new", 1).TryAcquire(ctx, 1)
	assert.ErrorContains(t, err, "OOM", "a new semaphore on a full server")
	assert.Equal(t, before, semaphoreState(t, c, name), "nothing written")
	require.Zero(t, c.Exists(ctx, "full:new", "{full:new}:permits", "{full:new}:weights").Val())

	assert.NoError(t, s.Release(helds[0]), "a release on a full server")
	require.NoError(t, c.ConfigSet(ctx, "maxmemory", "0").Err())
	_ = s.Release(helds[1])
}

// semaphoreState is what a semaphore records, but for the permits'
// expiries (renewals move them): its hash, permit ids, weights, line.
func semaphoreState(t *testing.T, c redis.UniversalClient, name string) []any {
	t.Helper()
	ctx := context.Background()
	return []any{
		c.HGetAll(ctx, name).Val(),
		c.ZRange(ctx, "{"+name+"}:permits", 0, -1).Val(),
		c.HGetAll(ctx, "{"+name+"}:weights").Val(),
		c.ZRange(ctx, "{"+name+"}:waiters", 0, -1).Val(),
		c.HGetAll(ctx, "{"+name+"}:waiter_expiry").Val(),
	}
}
