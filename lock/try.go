package lock

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/internal/scripts"
)

// runAcquire runs the acquire script once for ownerID in mode; latch names
// the acquire latch (scripts.ModeLatch). It returns the hold count after it (0
// when another owner holds the lock, for ttl) and the token. An
// acquisition too few replicas acknowledged (sync) is given back, and
// reported as ErrNotReplicated. A fair lock's waiter takes its place in
// the list (or keeps it) when mark is its mark life; with 0 it takes none.
func (m *Mutex) runAcquire(ctx context.Context, sync scripts.ReplicaPolicy, ownerID, waiterID string, lease time.Duration, mode any, latch string, mark time.Duration) (count, token int64, ttl time.Duration, err error) {
	var latchArg any = m.nameArg // a key of the slot, unused without a latch
	if latch != "" {
		latchArg = latch
	}
	cmd, acks := m.scripts.acquire(ctx, m, sync, acquireArgs{owner: ownerID, waiter: waiterID, lease: lease, mark: mark, mode: mode, latch: latchArg})
	if err := cmd.Err(); err != nil {
		return 0, 0, 0, err
	}
	count, token, ttl, err = parseAcquire(cmd)
	if err != nil || count == 0 || sync.Enough(acks) {
		return count, token, ttl, err
	}
	undo := func() error { return m.undo(ctx, ownerID, latch, lease) }
	if mark > 0 && count == 1 && latch == "" { // a fair lock's waiter
		undo = func() error { return m.requeue(ctx, ownerID, waiterID, mark, lease) } // keeps its place
	}
	return 0, 0, 0, sync.Refuse(acks, undo)
}

func parseAcquire(cmd *redis.Cmd) (count, token int64, ttl time.Duration, err error) {
	switch v := cmd.Val().(type) {
	case int64: // the lock was free: its token
		return 1, v, 0, nil
	case []any:
		if len(v) == 2 {
			c, ok1 := v[0].(int64)
			n, ok2 := v[1].(int64)
			switch {
			case ok1 && ok2 && c == 0:
				return 0, 0, time.Duration(n) * time.Millisecond, nil
			case ok1 && ok2:
				return c, n, 0, nil
			}
		}
	}
	return 0, 0, 0, fmt.Errorf("unexpected reply %v", cmd.Val())
}
