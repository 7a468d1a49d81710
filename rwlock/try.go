package rwlock

import (
	"context"
	"fmt"
	"time"

	"github.com/relock-go/relock/internal/errs"
	"github.com/relock-go/relock/internal/scripts"
)

// runAcquire runs side s's acquire script once: the count after it (0:
// wait, for ttl) and the token. member marks a waiting writer ("" for
// none); mode and latch make a rerun return the first run's grant. With
// too few replica acks (sync) it gives the count back: ErrNotReplicated.
func (rw *RWMutex) runAcquire(ctx context.Context, sync scripts.ReplicaPolicy, s access, ownerID string, leaseTime time.Duration, member string, mode any, latch string) (count, token int64, ttl time.Duration, err error) {
	latchKey := rw.name // a key of the slot, unused without a latch
	if latch != "" {
		latchKey = latch
	}
	var call scripts.Call
	if s == read {
		call = readAcquireLua{
			Lock: rw.args.name, LeaseKeys: rw.timeoutPrefix(ownerID), WriteWaiters: rw.args.waiters, TokenCounter: rw.args.token, Latch: latchKey,
			LeaseMS: leaseTime.Milliseconds(), Owner: ownerID, WriteOwner: ownerID + ":write", Mode: mode,
			LatchLife: rw.cfg.LatchArg(rw.cfg.UnlockTimeout),
		}.call()
	} else {
		call = writeAcquireLua{
			Lock: rw.args.name, WriteWaiters: rw.args.waiters, TokenCounter: rw.args.token, Prefix: rw.args.prefix, Latch: latchKey,
			LeaseMS: leaseTime.Milliseconds(), WriteOwner: ownerID + ":write", Owner: ownerID, Member: member, Mode: mode,
			LatchLife: rw.cfg.LatchArg(rw.cfg.UnlockTimeout),
		}.call()
	}
	cmd, acks := call.Synced(ctx, rw.client.Client, sync)
	vals, err := cmd.Int64Slice()
	switch {
	case err != nil:
		return 0, 0, 0, err
	case len(vals) != 2:
		return 0, 0, 0, fmt.Errorf("unexpected reply %v", vals)
	case vals[0] == -1:
		return 0, 0, 0, ErrUpgradeNotSupported
	case vals[0] == -2:
		return 0, 0, 0, errs.WrongKind(vals[1])
	case vals[0] == 0:
		return 0, 0, time.Duration(vals[1]) * time.Millisecond, nil
	}
	if sync.Enough(acks) {
		return vals[0], vals[1], 0, nil
	}
	return 0, 0, 0, sync.Refuse(acks, func() error { return rw.undo(ctx, s, ownerID, latch) })
}
