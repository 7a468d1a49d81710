package lock

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/internal/conn"
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
	}.call().Retrying(context.WithoutCancel(ctx), m.client, m.cfg.UnlockTimeout).Err()
}

// fairMarkLife is how long a fair lock's waiter keeps its place in the
// list without renewing it: the longest a waiter that died while queued
// holds the others back. A live waiter renews it at least every third of
// it (its tries: the acquire script tells it when).
const fairMarkLife = 3 * time.Second

// NewFair returns a fair Mutex called name on client: as New returns, but
// the lock goes to its waiters first come, first served, across processes
// and clients, in Redisson RFairLock's layout, so that a Java service on
// RFairLock and a Go service share one line. The waiters are listed in
// redisson_lock_queue:{name} in arrival order, each with a deadline in
// redisson_lock_timeout:{name} (server time), and a release wakes only
// the first, on its own channel redisson_lock__channel:{name}:<waiter id>. A
// waiter keeps its place by renewing its deadline while it waits (every
// second or so); one that died holds the line back for 3 s at most, and
// one that gives up (its wait bound, its context) leaves at once. TryLock
// takes the lock only when nobody waits for it, and never takes a place.
// A release hands the lock to the first waiter itself when that waiter is
// relock's, in this process or another (relock_fair_waiter:{name} lists
// them): it writes the hold, with a TTL of a second or more that the
// waiter's watchdog renews at once, and sends the token on the waiter's
// channel, so the waiter takes the lock without a round trip of its own.
// A Redisson thread first in line is sent the unlock message and tries.
// A relock waiter's id in the list is a seat of its process, not its
// owner id: a seat and its channel's subscription serve one waiter after
// another, so that waiting costs no SUBSCRIBE of its own.
func NewFair(client redis.UniversalClient, name string, opts ...Option) *Mutex {
	return newMutex(conn.Of(client), name, true, opts)
}

// withdraw takes a fair lock's waiter that gave up out of the list,
// waking the next one if it was first and the lock is free
// (core.Withdraw). A place left behind (Redis unreachable) lapses with
// its deadline; the error says so.
func (m *Mutex) withdraw(ctx context.Context, ownerID, waiterID string) error {
	return core.Withdraw(ctx, nil, m.client, m.cfg.UnlockTimeout, fairWithdrawLua{
		Lock: m.name, Channel: m.channel, Queue: m.fair[0], Timeouts: m.fair[1], TokenCounter: m.tokenArg, Waiters: m.fair[2],
		Waiter: waiterID, UnlockMessage: unlockMessage, Publish: m.publishArg, Grant: m.grantArg(ctx), Owner: ownerID,
	}.call())
}

// grantArg says whether a release may write the first waiter's hold
// itself: not where replica sync asks for a WAIT after every
// acquisition, which a hold written inside a release would not have.
// Both sides ask: a releaser for its own config, and a waiter for its
// own, which it states in the list (lua/fair_acquire.lua), since the
// release may come from a process configured otherwise.
func (m *Mutex) grantArg(ctx context.Context) any {
	if scripts.SyncNeeded(ctx, m.client, m.cfg.ReplicaPolicy(), m.name) {
		return "0"
	}
	return "1"
}

// fairRelease gives back ownerID's last count of a fair lock when this
// process has waiters for it: one script frees the lock and, when the
// first live waiter in line is one of them, writes the hold for it (a
// Grant, no try of its own); otherwise it wakes the first waiter on its
// channel. ran is false when there was no local waiter to offer, and the
// caller releases as usual. The result is releaseLast's: 1 released or
// handed over, -1 not held, -2 more counts held (nothing done).
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
	}.call().Retrying(ctx, m.client, timeout)
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
