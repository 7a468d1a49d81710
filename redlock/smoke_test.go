package redlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/redistest"
	"github.com/relock-go/relock/lock"
	"github.com/relock-go/relock/redlock"
)

func TestSmoke(t *testing.T) {
	srvs := redistest.StartServers(t, 5)
	var members []redlock.Member
	for _, s := range srvs {
		c := s.Client(t, func(o *redis.Options) { o.MaxRetries = -1; o.DialTimeout = 100 * time.Millisecond })
		members = append(members, lock.New(c, "res"))
	}
	ctx := context.Background()
	rl := redlock.New(members)
	h, err := rl.Lock(ctx)
	require.NoError(t, err)
	tok, _ := lock.FencingToken(h)
	t.Log("token", tok)
	_, err = redlock.New(members).TryLock(ctx)
	require.ErrorIs(t, err, redlock.ErrNotAcquired)
	t.Log(err)
	require.NoError(t, rl.Unlock(h))
	srvs[0].Kill()
	srvs[1].Kill()
	start := time.Now()
	h, err = rl.Lock(ctx)
	require.NoError(t, err)
	t.Log("2 down, took", time.Since(start))
	require.NoError(t, rl.Unlock(h))
	srvs[2].Kill()
	_, err = rl.TryLock(ctx)
	require.ErrorIs(t, err, redlock.ErrNotAcquired)
	t.Log(err)
}
