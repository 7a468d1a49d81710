package lock

import (
	"context"
	"time"

	"github.com/relock-go/relock/internal/lease"
	"github.com/relock-go/relock/internal/scripts"
)

// scriptSet lays out the script calls of one kind of Mutex, chosen once by
// New (plainSet) or NewFair (fairSet) so that no call asks which kind it is.
type scriptSet interface {
	acquire(m *Mutex, a acquireArgs) scripts.Call
	unlockLast(ctx context.Context, m *Mutex, owner string) scripts.Call
	unlock(ctx context.Context, m *Mutex, latch, owner string, lease, timeout time.Duration) scripts.Call
	// giveBack is lua/give_back.lua: one acquisition's count, by its latch.
	giveBack(ctx context.Context, m *Mutex, latch, owner string) scripts.Call
	// seat places a among the waiters and returns the channel it is woken
	// on; seated reports a place in Redis's line (a fair waiter).
	seat(m *Mutex, a *attempt, once bool) (channel string, seated bool)
	// handOver releases owner's last count, handing the lock to the first
	// waiter (a fair lock's line); ran is false when it cannot.
	handOver(ctx context.Context, m *Mutex, owner string, timeout time.Duration, held *lease.Lease) (res int64, ran bool, err error)
}

// acquireArgs is one try of the acquire script.
type acquireArgs struct {
	owner       any // boxed once per acquisition (attempt.ownerArg)
	waiter      string
	lease, mark time.Duration
	mode        any
	latch       any // the acquire latch key, or a key of the slot, unused
	grantable   any // a fair waiter's: grantArg
}

// plainSet is a Mutex's scripts.
type plainSet struct{}

func (plainSet) acquire(m *Mutex, a acquireArgs) scripts.Call {
	if a.mode != scripts.ModeLatch {
		return acquireLua{Lock: m.nameArg, TokenCounter: m.tokenArg, LeaseMS: m.msArg(a.lease), Owner: a.owner, Mode: a.mode}.call()
	}
	return acquireLua{
		Lock: m.nameArg, TokenCounter: m.tokenArg, Latch: a.latch,
		LeaseMS: m.msArg(a.lease), Owner: a.owner, Mode: a.mode, LatchLife: m.cfg.LatchArg(m.cfg.UnlockTimeout),
	}.call()
}

func (plainSet) unlockLast(_ context.Context, m *Mutex, owner string) scripts.Call {
	return unlockLastLua{
		Lock: m.nameArg, Channel: m.channelArg, TokenCounter: m.tokenArg, Forced: m.forcedArg,
		UnlockMessage: unlockMessage, Owner: owner, Publish: m.publishArg,
	}.call()
}

func (plainSet) unlock(_ context.Context, m *Mutex, latch, owner string, lease, timeout time.Duration) scripts.Call {
	return unlockLua{
		Lock: m.name, Channel: m.channel, Latch: latch,
		UnlockMessage: unlockMessage, LeaseMS: m.msArg(lease), Owner: owner, Publish: m.publishArg, LatchLife: m.cfg.LatchArg(timeout),
	}.call()
}

func (plainSet) seat(m *Mutex, _ *attempt, _ bool) (string, bool) { return m.channel, false }

func (plainSet) handOver(context.Context, *Mutex, string, time.Duration, *lease.Lease) (int64, bool, error) {
	return 0, false, nil // a local waiter is reserved instead (core.Hub.Reserve)
}

func (plainSet) giveBack(_ context.Context, m *Mutex, latch, owner string) scripts.Call {
	return giveBackLua{
		Lock: m.name, Latch: latch, Channel: m.channel,
		Owner: owner, UnlockMessage: unlockMessage, Publish: m.publishArg,
	}.call()
}

// fairSet is a fair Mutex's scripts: the plain release scripts with
// wakeLib, the waiter list's keys after the plain lock's, and grantArg.
type fairSet struct {
	queue, timeouts, waiters any
}

func (f fairSet) acquire(m *Mutex, a acquireArgs) scripts.Call {
	return fairAcquireLua{
		Lock: m.nameArg, TokenCounter: m.tokenArg, Latch: a.latch, Queue: f.queue, Timeouts: f.timeouts, Waiters: f.waiters,
		LeaseMS: m.msArg(a.lease), Owner: a.owner, Mode: a.mode, LatchLife: m.cfg.LatchArg(m.cfg.UnlockTimeout),
		MarkLifeMS: a.mark.Milliseconds(), Waiter: a.waiter, Grantable: a.grantable,
	}.call()
}

func (f fairSet) unlockLast(ctx context.Context, m *Mutex, owner string) scripts.Call {
	return unlockLastLua{
		Lock: m.nameArg, Channel: m.channelArg, TokenCounter: m.tokenArg, Forced: m.forcedArg,
		Queue: f.queue, Timeouts: f.timeouts, Waiters: f.waiters,
		UnlockMessage: unlockMessage, Owner: owner, Publish: m.publishArg, Grant: m.grantArg(ctx),
	}.fairCall()
}

func (f fairSet) unlock(ctx context.Context, m *Mutex, latch, owner string, lease, timeout time.Duration) scripts.Call {
	return unlockLua{
		Lock: m.name, Channel: m.channel, Latch: latch, Queue: f.queue, Timeouts: f.timeouts, TokenCounter: m.tokenArg, Waiters: f.waiters,
		UnlockMessage: unlockMessage, LeaseMS: m.msArg(lease), Owner: owner, Publish: m.publishArg, LatchLife: m.cfg.LatchArg(timeout),
		Grant: m.grantArg(ctx),
	}.fairCall()
}

func (f fairSet) giveBack(ctx context.Context, m *Mutex, latch, owner string) scripts.Call {
	return giveBackLua{
		Lock: m.name, Latch: latch, Channel: m.channel, Queue: f.queue, Timeouts: f.timeouts, TokenCounter: m.tokenArg, Waiters: f.waiters,
		Owner: owner, UnlockMessage: unlockMessage, Publish: m.publishArg, Grant: m.grantArg(ctx),
	}.fairCall()
}

func (fairSet) seat(m *Mutex, a *attempt, once bool) (string, bool) {
	a.seat = a.owner // a try that takes no place
	if !once {
		a.mark = fairMarkLife
		a.seat = m.hub.TakeSeat(m.channel)
	}
	return m.channel + ":" + a.seat, !once // each waiter is woken alone, in turn
}

func (fairSet) handOver(ctx context.Context, m *Mutex, owner string, timeout time.Duration, held *lease.Lease) (int64, bool, error) {
	return m.fairRelease(ctx, owner, timeout, held)
}
