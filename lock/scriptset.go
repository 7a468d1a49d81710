package lock

import (
	"context"
	"time"

	"github.com/relock-go/relock/internal/lease"
	"github.com/relock-go/relock/internal/scripts"
)

// scriptSet lays out the script calls of one kind of Mutex, chosen once
// by New (plainSet) or NewFair (fairSet), so that no call on the path asks
// which kind it runs, each through its script's wrapper (luacalls.go); the
// caller sends them.
type scriptSet interface {
	// acquire is one try of the acquire script.
	acquire(m *Mutex, a acquireArgs) scripts.Call
	// unlockLast is lua/unlock_last.lua for owner.
	unlockLast(ctx context.Context, m *Mutex, owner string) scripts.Call
	// unlock is lua/unlock.lua for owner, through the unlock latch, which
	// lives core.LatchLife(timeout).
	unlock(ctx context.Context, m *Mutex, latch, owner string, lease, timeout time.Duration) scripts.Call
	// giveBack is lua/give_back.lua: the count of one acquisition of
	// owner, through its acquire latch.
	giveBack(ctx context.Context, m *Mutex, latch, owner string) scripts.Call
	// seat gives acquisition a its place among the waiters and returns
	// the channel it is woken on; seated reports a place in Redis's line
	// (a fair lock's waiter).
	seat(m *Mutex, a *attempt, once bool) (channel string, seated bool)
	// handOver releases owner's last count, handing the lock to the
	// first waiter when the release itself can (a fair lock's line); ran
	// is false when it cannot, and the release goes on as a plain one.
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

// fairSet is a fair Mutex's scripts: the release scripts are the plain
// lock's Lua files with the library that serves the first waiter
// (wakeLib), given the waiter list's keys after the plain lock's (queue,
// timeouts, token counter, waiters hash) and one argument more (whether a
// release may write that waiter's hold: grantArg).
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
