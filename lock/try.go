package lock

import (
	"context"
	"fmt"
	"time"

	"github.com/relock-go/relock/internal/core"
	"github.com/relock-go/relock/internal/errs"
)

// Send runs the acquire script once for a.owner in a.mode (core.Attempt):
// the hold count after it (0 when another owner holds the lock, for TTL)
// and the token. An acquisition too few replicas acknowledged is given back
// as ErrNotReplicated. A fair waiter takes or keeps its place in the list
// when a.mark is its mark life (with 0 it takes none), even off the head
// of the local queue: each waits on a channel of its own.
func (a *attempt) Send(ctx context.Context, _ bool) (core.Reply, error) {
	m, sync := a.m, a.cfg.ReplicaPolicy()
	var latchArg any = m.nameArg // a key of the slot, unused without a latch
	if a.latch != "" {
		latchArg = a.latch
	}
	args := acquireArgs{owner: a.ownerArg, waiter: a.seat, lease: a.lease, mark: a.mark, mode: a.mode, latch: latchArg, grantable: "0"}
	if a.mark > 0 { // a fair lock's waiter, which takes its place in the list
		args.grantable = m.grantArg(ctx)
	}
	cmd, acks := m.scripts.acquire(m, args).Synced(ctx, m.client.Client, sync)
	if err := cmd.Err(); err != nil {
		return core.Reply{}, err
	}
	r, err := parseAcquire(cmd.Val())
	if err != nil || r.Count == 0 || sync.Enough(acks) {
		return r, err
	}
	undo := func() error { return m.undo(ctx, a.owner, a.latch, a.lease) }
	if a.mark > 0 && r.Count == 1 && a.latch == "" { // a fair lock's waiter
		undo = func() error { return m.requeue(ctx, a.owner, a.seat, a.mark, a.lease) } // keeps its place
	}
	return core.Reply{}, sync.Refuse(acks, undo)
}

func parseAcquire(reply any) (core.Reply, error) {
	switch v := reply.(type) {
	case int64: // the lock was free: its token
		return core.Reply{Count: 1, Token: v}, nil
	case []any:
		if len(v) == 2 {
			c, ok1 := v[0].(int64)
			n, ok2 := v[1].(int64)
			switch {
			case ok1 && ok2 && c == -2:
				return core.Reply{}, errs.WrongKind(n)
			case ok1 && ok2 && c == 0:
				return core.Reply{TTL: time.Duration(n) * time.Millisecond}, nil
			case ok1 && ok2:
				return core.Reply{Count: c, Token: n}, nil
			}
		}
	}
	return core.Reply{}, fmt.Errorf("unexpected reply %v", reply)
}
