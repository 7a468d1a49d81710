package lock

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/internal/core"
	"github.com/relock-go/relock/internal/lease"
	"github.com/relock-go/relock/internal/scripts"
)

// requeue gives back a fair lock a waiter took as the first in line, and
// puts it back at the head of the line, retried for the unlock timeout.
func (m *Mutex) requeue(ctx context.Context, ownerID, waiterID string, mark, lease time.Duration) error {
	return fairRequeueLua{
		Lock: m.nameArg, Queue: m.fair[0], Timeouts: m.fair[1], Waiters: m.fair[2],
		Owner: ownerID, MarkLifeMS: mark.Milliseconds(), LeaseMS: m.msArg(lease), Waiter: waiterID,
	}.call().Retrying(context.WithoutCancel(ctx), m.client.Client, m.cfg.UnlockTimeout).Err()
}

// fairMarkLife is how long a fair waiter keeps its place without renewing
// it: the longest a dead waiter holds the line back. A live one renews it
// at least every third of it, by trying (the acquire script says when).
const fairMarkLife = 3 * time.Second

// NewFair returns a fair Mutex called name on client: as New, but the lock
// goes to its waiters first come, first served across processes, in
// Redisson RFairLock's layout (see the package's Fair locks section), so a
// Java service on RFairLock and a Go service share one line. A release
// hands the lock itself to a first waiter that is relock's, in any
// process: it writes the hold, with a TTL of a second or more that the
// waiter's watchdog renews at once, and sends the token on the waiter's
// channel; a Redisson thread is sent the unlock message and tries. A relock
// waiter's id in the list is a seat of its process, not its owner id: a
// seat and its subscription serve one waiter after another, so waiting
// costs no SUBSCRIBE of its own.
func NewFair(client redis.UniversalClient, name string, opts ...Option) *Mutex {
	return newMutex(core.ClientOf(client), name, true, opts)
}

// withdraw takes a waiter that gave up out of the list, waking the next if
// it was first and the lock is free (core.Withdraw). A place left behind
// (Redis unreachable) lapses with its deadline; the error says so.
func (m *Mutex) withdraw(ctx context.Context, ownerID, waiterID string) error {
	return core.Withdraw(ctx, nil, m.client, m.cfg.UnlockTimeout, fairWithdrawLua{
		Lock: m.name, Channel: m.channel, Queue: m.fair[0], Timeouts: m.fair[1], TokenCounter: m.tokenArg, Waiters: m.fair[2],
		Waiter: waiterID, UnlockMessage: unlockMessage, Publish: m.publishArg, Grant: m.grantArg(ctx), Owner: ownerID,
	}.call())
}

// grantArg says whether a release may write the first waiter's hold
// itself: not where replica sync wants a WAIT after every acquisition.
// Releaser and waiter each ask for their own config (the waiter states its
// answer in the list: lua/fair_acquire.lua).
func (m *Mutex) grantArg(ctx context.Context) any {
	if scripts.SyncNeeded(ctx, m.client.Client, m.cfg.ReplicaPolicy(), m.name) {
		return "0"
	}
	return "1"
}

// fairRelease gives back ownerID's last count when this process has
// waiters: one script frees the lock and writes the hold of the first live
// waiter if it is one of them (a Grant), else wakes the first waiter. ran
// is false when no local waiter was offered. res is releaseLast's: 1
// released or handed over, -1 not held, -2 more counts held (nothing done).
func (m *Mutex) fairRelease(ctx context.Context, ownerID string, timeout time.Duration, held *lease.Lease) (res int64, ran bool, err error) {
	ws, _ := m.hub.Reserve(m.channel, core.Pick{Seats: true}, nil)
	if len(ws) == 0 {
		return 0, false, nil
	}
	sentAt := make([]time.Time, len(ws))
	for i, w := range ws {
		sentAt[i] = w.Claimant().(*attempt).wd.Now()
	}
	reply := fairTransferLua{
		Lock: m.nameArg, TokenCounter: m.tokenArg, Queue: m.fair[0], Timeouts: m.fair[1], Channel: m.channelArg, Waiters: m.fair[2],
		Owner: ownerID, UnlockMessage: unlockMessage, Publish: m.publishArg, Grant: "1", Candidates: ws,
	}.call().Retrying(ctx, m.client.Client, timeout)
	vals, err := reply.Slice()
	if err == nil && len(vals) != 3 {
		err = fmt.Errorf("unexpected reply %v", vals)
	}
	if err != nil {
		for _, w := range ws {
			w.End(core.Refused, core.Grant{})
		}
		return 0, true, err
	}
	res, _ = vals[0].(int64)
	to, _ := vals[2].(string)
	for i, w := range ws {
		if res == 1 && w.Claimant().(*attempt).seat == to {
			token, _ := vals[1].(int64)
			w.End(core.Handed, core.Grant{Token: token, SentAt: sentAt[i]})
			continue
		}
		w.End(core.Passed, core.Grant{})
	}
	switch {
	case res == 0:
		res = 1 // freed; the first waiter, elsewhere, woken
	case res == -1 && reply.Retried && (held == nil || !held.Lapsed()):
		res = 1 // an earlier run released it (the lease could not have lapsed)
	}
	return res, true, nil
}
