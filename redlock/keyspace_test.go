package redlock_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/scripts"
	"github.com/relock-go/relock/internal/testkit/redistest"
	"github.com/relock-go/relock/redlock"
	"github.com/relock-go/relock/rwlock"
)

// TestKeyspaceBounded locks and unlocks Redlocks and multi-locks of many
// distinct names over 3 masters (lock members, rwlock read and write
// sides): on every master, what is left is fencing counters and unlock
// latches, each with a TTL no longer than the counter's.
func TestKeyspaceBounded(t *testing.T) {
	ctx := ctxT(t)
	ms := startMasters(t, 3)
	cs := ms.process(t)
	const names = 60
	for i := range names {
		name := fmt.Sprintf("job:%d", i)
		var members []redlock.Member
		switch i % 3 {
		case 0:
			members = mutexes(cs, name)
		case 1:
			for _, c := range cs {
				members = append(members, rwlock.New(c, name).WriteLocker())
			}
		case 2:
			for _, c := range cs {
				members = append(members, rwlock.New(c, name).ReadLocker())
			}
		}
		for _, rl := range []*redlock.Lock{redlock.New(members), redlock.NewMulti(members)} {
			held, err := rl.Lock(ctx)
			require.NoError(t, err)
			inner, err := rl.Lock(held)
			require.NoError(t, err)
			require.NoError(t, rl.Unlock(inner))
			require.NoError(t, rl.Unlock(held))
		}
	}
	// A Redlock's Unlock returns once the quorum released; the last
	// member's give-back may still be on its way.
	require.Eventually(t, func() bool {
		for _, admin := range ms.admins {
			ks, err := redistest.KeyTTLs(ctx, admin)
			if err != nil {
				return false
			}
			for _, k := range ks {
				if strings.HasPrefix(k.Key, "job:") || strings.HasPrefix(k.Key, "{job:") {
					return false
				}
			}
		}
		return true
	}, 5*time.Second, 10*time.Millisecond, "the members' keys are released")
	for i, admin := range ms.admins {
		counters := 0
		for _, k := range redistest.RequireBoundedKeyspace(t, ctx, redis.UniversalClient(admin), scripts.FenceTTL) {
			switch {
			case strings.HasPrefix(k.Key, "redisson_lock_token:"):
				counters++
			case strings.HasPrefix(k.Key, "redisson_unlock_latch:"), strings.HasPrefix(k.Key, "relock_acquire_latch:"):
			default:
				t.Errorf("master %d: key %s (ttl %v) left after every hold ended", i, k.Key, k.TTL)
			}
		}
		require.Equal(t, names, counters, "master %d: one fencing counter per name", i)
	}
}
