package lock

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/internal/base"
	"github.com/relock-go/relock/internal/scripts"
)

var (
	fairAcquireScript  = scripts.Load(luaFS, "lua/fair_acquire.lua", scripts.Fence, wakeLib)
	fairWithdrawScript = scripts.Load(luaFS, "lua/fair_withdraw.lua", wakeLib)
)

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
// the first, on its own channel redisson_lock__channel:{name}:<owner>. A
// waiter keeps its place by renewing its deadline while it waits (every
// second or so); one that died holds the line back for 3 s at most, and
// one that gives up (its wait bound, its context) leaves at once. TryLock
// takes the lock only when nobody waits for it, and never takes a place.
// Unlike New's, a release does not hand the lock to a waiter of the same
// process directly: the first waiter in the list, wherever it runs, takes
// it with a try of its own.
func NewFair(client redis.UniversalClient, name string, opts ...Option) *Mutex {
	return newMutex(client, name, true, opts)
}

// withdraw takes a fair lock's waiter that gave up out of the list,
// waking the next one if it was first and the lock is free
// (base.Withdraw). A place left behind (Redis unreachable) lapses with
// its deadline.
func (m *Mutex) withdraw(ctx context.Context, ownerID string) {
	base.Withdraw(ctx, fairWithdrawScript, m.client, m.cfg.UnlockTimeout, 4, m.name, m.channel, m.fair[0], m.fair[1], ownerID, unlockMessage, m.publishArg)
}
