package lock

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/internal/lease"
	"github.com/relock-go/relock/internal/scripts"
)

// scriptSet runs the scripts of one kind of Mutex, chosen once by New
// (plainSet) or NewFair (fairSet), so that no call on the path asks which
// kind it runs. The Lua files' headers give their KEYS and ARGV.
type scriptSet interface {
	// acquire runs the acquire script once, followed by the replicas'
	// acknowledgement when sync asks for it.
	acquire(ctx context.Context, m *Mutex, sync scripts.ReplicaPolicy, a acquireArgs) (*redis.Cmd, scripts.Acks)
	// unlockLast runs lua/unlock_last.lua for owner.
	unlockLast(ctx context.Context, m *Mutex, owner string, timeout time.Duration) scripts.Reply
	// unlock runs lua/unlock.lua for owner, through the unlock latch.
	unlock(ctx context.Context, m *Mutex, latch, owner string, lease, timeout time.Duration) scripts.Reply
	// giveBack runs lua/give_back.lua: the count of one acquisition of
	// owner, through its acquire latch.
	giveBack(ctx context.Context, m *Mutex, latch, owner string, timeout time.Duration) scripts.Reply
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
	owner, waiter string
	lease, mark   time.Duration
	mode          any
	latch         any // the acquire latch key, or a key of the slot, unused
}

// plainSet is a Mutex's scripts.
type plainSet struct{}

func (plainSet) acquire(ctx context.Context, m *Mutex, sync scripts.ReplicaPolicy, a acquireArgs) (*redis.Cmd, scripts.Acks) {
	return scripts.CallSynced(ctx, m.client, sync, acquireScript, 3, m.nameArg, m.tokenArg, a.latch,
		m.msArg(a.lease), a.owner, a.mode, m.cfg.LatchArg(m.cfg.UnlockTimeout))
}

func (plainSet) unlockLast(ctx context.Context, m *Mutex, owner string, timeout time.Duration) scripts.Reply {
	return unlockLastScript.CallRetrying(ctx, m.client, timeout, 2, m.nameArg, m.channelArg, unlockMessage, owner, m.publishArg)
}

func (plainSet) unlock(ctx context.Context, m *Mutex, latch, owner string, lease, timeout time.Duration) scripts.Reply {
	return unlockScript.CallRetrying(ctx, m.client, timeout, 3, m.name, m.channel, latch,
		unlockMessage, m.msArg(lease), owner, m.publishArg, m.cfg.LatchArg(timeout))
}

func (plainSet) seat(m *Mutex, _ *attempt, _ bool) (string, bool) { return m.channel, false }

func (plainSet) handOver(context.Context, *Mutex, string, time.Duration, *lease.Lease) (int64, bool, error) {
	return 0, false, nil // a local waiter is reserved instead (queue.Hub.Reserve)
}

func (plainSet) giveBack(ctx context.Context, m *Mutex, latch, owner string, timeout time.Duration) scripts.Reply {
	return giveBackScript.CallRetrying(ctx, m.client, timeout, 3, m.name, latch, m.channel, owner, unlockMessage, m.publishArg)
}

// fairSet is a fair Mutex's scripts: the release scripts are the plain
// lock's Lua files with the library that serves the first waiter
// (wakeLib), given the waiter list's keys after the plain lock's (queue,
// timeouts, token counter, waiters hash) and one argument more (whether a
// release may write that waiter's hold: grantArg).
type fairSet struct {
	queue, timeouts, waiters any
}

func (f fairSet) acquire(ctx context.Context, m *Mutex, sync scripts.ReplicaPolicy, a acquireArgs) (*redis.Cmd, scripts.Acks) {
	return scripts.CallSynced(ctx, m.client, sync, fairAcquireScript, 6, m.nameArg, m.tokenArg, a.latch, f.queue, f.timeouts, f.waiters,
		m.msArg(a.lease), a.owner, a.mode, m.cfg.LatchArg(m.cfg.UnlockTimeout), a.mark.Milliseconds(), a.waiter)
}

func (f fairSet) unlockLast(ctx context.Context, m *Mutex, owner string, timeout time.Duration) scripts.Reply {
	return fairUnlockLastScript.CallRetrying(ctx, m.client, timeout, 6, m.nameArg, m.channelArg, f.queue, f.timeouts, m.tokenArg, f.waiters,
		unlockMessage, owner, m.publishArg, m.grantArg(ctx))
}

func (f fairSet) unlock(ctx context.Context, m *Mutex, latch, owner string, lease, timeout time.Duration) scripts.Reply {
	return fairUnlockScript.CallRetrying(ctx, m.client, timeout, 7, m.name, m.channel, latch, f.queue, f.timeouts, m.tokenArg, f.waiters,
		unlockMessage, m.msArg(lease), owner, m.publishArg, m.cfg.LatchArg(timeout), m.grantArg(ctx))
}

func (f fairSet) giveBack(ctx context.Context, m *Mutex, latch, owner string, timeout time.Duration) scripts.Reply {
	return fairGiveBackScript.CallRetrying(ctx, m.client, timeout, 7, m.name, latch, m.channel, f.queue, f.timeouts, m.tokenArg, f.waiters,
		owner, unlockMessage, m.publishArg, m.grantArg(ctx))
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
