package rwlock

import (
	"context"
	"fmt"
	"time"

	"github.com/relock-go/relock/internal/core"
	"github.com/relock-go/relock/internal/scripts"
)

// A writer's release hands the read lock to this process's readers at the
// front of the local queue (lua/write_release.lua), unless a writer waits.
// Only readers with minted owners are handed it: their count can only be
// 1, and a rerun of the script leaves them to find the hold with a try.

// maxReaderHandOff bounds the readers one release hands the lock to; the rest try.
const maxReaderHandOff = 64

// readClaim is a waiting reader's side of a hand-off.
type readClaim struct {
	rw     *RWMutex
	ctx    context.Context // the acquiring context, for a Discard
	owner  string
	lease  time.Duration
	given  bool
	token  int64
	sentAt time.Time
	// mayHold: a release that offered it the lock failed or was answered
	// by its latch, so the reader may hold it; a give-up gives it back.
	mayHold bool
}

func (c *readClaim) Granted(g core.Grant) { c.given, c.token, c.sentAt = true, g.Token, g.SentAt }

// Declines is core.Claimant's: a hand-off has no WAIT after it, which this
// reader's replica sync may need, whatever the releasing RWMutex's config.
func (c *readClaim) Declines(ctx context.Context) bool {
	return scripts.SyncNeeded(ctx, c.rw.client.Client, c.rw.cfg.ReplicaPolicy(), c.rw.name)
}

// Discard gives back a read lock handed over as the acquire gave up.
func (c *readClaim) Discard(core.Grant) {
	_, _ = c.rw.runRelease(context.WithoutCancel(c.ctx), read, c.owner, c.rw.cfg.UnlockTimeout)
}

// releaseWrite gives back a write count of h, handing off when it is the last.
func (rw *RWMutex) releaseWrite(ctx context.Context, h *core.Hold) error {
	last := h.Lease.Release()
	var res int64
	var err error
	// A hand-off has no WAIT after it: with replica sync, readers try.
	if last && !scripts.SyncNeeded(ctx, rw.client.Client, rw.cfg.ReplicaPolicy(), rw.name) {
		res, err = rw.releaseToReaders(ctx, h.Owner, rw.cfg.UnlockTimeout)
	} else {
		res, err = rw.runRelease(ctx, write, h.Owner, rw.cfg.UnlockTimeout)
	}
	rw.dropLabel(ctx, h, write, last && err == nil && res != -1)
	return rw.released(h, res, err)
}

// releaseToReaders releases ownerID's write count, handing the read lock
// to the local readers in front, if any; it returns as runRelease.
func (rw *RWMutex) releaseToReaders(ctx context.Context, ownerID string, timeout time.Duration) (int64, error) {
	ws, _ := rw.hub.Reserve(rw.channel, core.Pick{Max: maxReaderHandOff, Shared: true}, nil)
	if len(ws) == 0 {
		return rw.runRelease(ctx, write, ownerID, timeout)
	}
	readers := make([]any, 0, 2*len(ws))
	for _, w := range ws {
		rc := w.Claimant().(*readClaim)
		readers = append(readers, rc.owner, rc.lease.Milliseconds())
	}
	sentAt := rw.cfg.Watchdog.Now()
	vals, err := rw.writeRelease(ctx, ownerID, rw.latch(), "", timeout, readers)
	if err != nil {
		for _, w := range ws {
			w.Claimant().(*readClaim).mayHold = true // written before End wakes it
			w.End(core.Refused, core.Grant{})
		}
		return 0, err
	}
	handed := vals[0] == 1 && len(vals) == 1+len(ws)
	for i, w := range ws {
		if handed {
			w.End(core.Handed, core.Grant{Token: vals[1+i], SentAt: sentAt})
			continue
		}
		// It tries: a writer waits, counts remain, or an earlier run took its lock.
		w.Claimant().(*readClaim).mayHold = vals[0] == 1
		w.End(core.Refused, core.Grant{})
	}
	if vals[0] == 1 {
		rw.hub.Release(rw.channel)
	}
	return vals[0], nil
}

// writeRelease runs lua/write_release.lua until it answers or timeout
// passes, handing the read lock at zero to readers (owner id, lease in ms,
// each): {1, token per reader handed} released, {0} counts remain, {-1}
// not held, {-2} as releaseOnce's.
func (rw *RWMutex) writeRelease(ctx context.Context, ownerID, latch, acquireLatch string, timeout time.Duration, readers []any) ([]int64, error) {
	vals, err := writeReleaseLua{
		Lock: rw.args.name, Channel: rw.args.channel, Latch: latch, WriteWaiters: rw.args.waiters, TokenCounter: rw.args.token, Prefix: rw.args.prefix,
		AcquireLatch: acquireLatch, WriteOwner: ownerID + ":write", Publish: rw.args.publish, LatchLife: rw.cfg.LatchArg(timeout), Readers: readers,
	}.call().Retrying(ctx, rw.client.Client, timeout).Int64Slice()
	if err == nil && len(vals) == 0 {
		err = fmt.Errorf("unexpected reply %v", vals)
	}
	return vals, err
}
