package semaphore

import (
	"context"
	"fmt"
	"time"

	"github.com/relock-go/relock/internal/core"
	"github.com/relock-go/relock/internal/scripts"
)

// A release hands the permits it frees to the waiters at the front of this
// process's local queue (lua/release.lua), each served as its own try
// would be. A waiter served with nothing left free promotes the next
// without a try (it waits for the next release); otherwise the next tries.

// maxOffered bounds the waiters one release offers its permits to.
const maxOffered = 64

// waiter is one acquisition's side of a hand-off (core.Claimant).
type waiter struct {
	s        *Semaphore
	ctx      context.Context // the caller's, for a Discard
	permitID string
	n        int64
	lease    time.Duration
	sentAt   time.Time // of the try or the hand-off that took the permits
}

// Granted takes the permits a release handed over, sent at g.SentAt.
func (w *waiter) Granted(g core.Grant) { w.sentAt = g.SentAt }

// Declines is core.Claimant's: a hand-off has no WAIT after it, which this
// waiter's replica sync may need, whatever the releasing Semaphore's config.
func (w *waiter) Declines(ctx context.Context) bool {
	return scripts.SyncNeeded(ctx, w.s.client.Client, w.s.cfg.ReplicaPolicy(), w.s.name)
}

// Discard gives back permits handed over as the acquire gave up.
func (w *waiter) Discard(core.Grant) { _ = w.s.undo(w.ctx, w.permitID) }

// releaseServing gives back permitID's permits (weight n; 0 offers them to
// no one), handing what fits to the local waiters in front, retried for
// the unlock timeout: 1 released, -1 not held.
func (s *Semaphore) releaseServing(ctx context.Context, permitID string, n int64) (int64, error) {
	var ws []*core.Waiter
	// A hand-off has no WAIT after it: where one is needed, waiters try.
	if n > 0 && !scripts.SyncNeeded(ctx, s.client.Client, s.cfg.ReplicaPolicy(), s.name) {
		ws, _ = s.hub.Reserve(s.channel, core.Pick{Max: int(min(n, maxOffered))}, nil)
	}
	sentAt := s.cfg.Watchdog.Now()
	vals, err := releaseLua{
		Semaphore: s.args.name, Permits: s.args.permits, Weights: s.args.weights, Channel: s.args.channel, Latch: core.RequestKey(s.latchPrefix),
		Waiters: s.args.waiters, Marks: s.args.marks,
		PermitID: permitID, Publish: s.args.publish, LatchLife: s.cfg.LatchArg(s.cfg.UnlockTimeout), Offered: ws,
	}.call().Retrying(ctx, s.client.Client, s.cfg.UnlockTimeout).Int64Slice()
	if err == nil && len(vals) != 3 {
		err = fmt.Errorf("unexpected reply %v", vals)
	}
	if err != nil {
		for _, w := range ws {
			w.End(core.Refused, core.Grant{})
		}
		return 0, err
	}
	res, served, free := vals[0], int(vals[1]), vals[2]
	for i, w := range ws {
		if i < served {
			w.End(core.Handed, core.Grant{SentAt: sentAt, NoneLeft: free == 0})
			continue
		}
		w.End(core.Passed, core.Grant{})
	}
	if res == 1 && served == 0 {
		s.hub.Release(s.channel)
	}
	return res, nil
}
