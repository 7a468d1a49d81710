// Package lock is a distributed, reentrant mutex on Redis, in Redisson's
// RLock key layout, so that a Java service using Redisson and a Go service
// using relock exclude each other on the same name.
//
// Ownership travels in the context. Lock returns a context that carries
// the hold: a nested Lock of the same lock on it re-enters; Unlock takes
// it back. Re-entry is per lock, so goroutines fanned out from lock Y's
// hold exclude each other on lock X; goroutines handed X's own hold share
// it, unless NewOwner gives one an owner of its own.
//
// The context given to Lock bounds the wait only, as in x/sync/semaphore
// and etcd's concurrency.Mutex: a hold ends by Unlock, by loss, or when Do
// returns (with WithHoldScopedToContext, when that context ends). The
// returned context keeps ctx's values, is done when the hold ends (cause
// ErrLockLost if the lease was lost: stop writing), and carries a fencing
// token (FencingToken) for a store to refuse a holder that lost the lock.
//
// The lock is a Redis hash named after the lock, field <owner> = count,
// with a TTL: 30 s by default, renewed every 10 s by the watchdog while
// held, or a fixed WithLeaseTime. Waiters wake on the unlock message on
// redisson_lock__channel:{name}, or at the TTL. One process's goroutines
// wait in line, first come first served, and Unlock hands the lock to the
// head in the same script (it is never free for another to barge in), so
// a contended critical section costs one round trip; after 16 hand-offs in
// a row, or 50 ms of them, it releases through Redis so that other
// processes get a turn. Across processes the plain lock is not fair: the
// fastest try wins, and a lone remote waiter may wait over a second while
// local goroutines take 16-70 ms turns. Use NewFair where order matters.
//
// # One name, one kind
//
// A name serves one kind of primitive: acquiring a name an rwlock or a
// semaphore holds fails at once with ErrWrongKind, writing nothing, and
// they refuse a lock's name alike. A plain lock, a fair lock and an
// election share the hash and exclude each other (fair order holds only
// among fair waiters).
//
// # Fair locks
//
// NewFair serves waiters first come, first served across processes, in
// Redisson RFairLock's layout: waiter ids in the list
// redisson_lock_queue:{name}, their deadlines (server time) in the zset
// redisson_lock_timeout:{name}, an unlock message for the first only, on
// redisson_lock__channel:{name}:<waiter id>; relock_fair_waiter:{name}
// lists relock waiters' owners. A waiter renews its deadline by trying at
// least every second; a dead one is dropped 3 s after its last renewal,
// one that gives up leaves at once. TryLock takes the lock only when
// nobody waits, and takes no place. All else is the plain lock's.
//
// # Replicas
//
// Where the server of the name's slot has replicas online, an acquisition
// (a re-entry too) is granted only once WithMinReplicas of them
// acknowledged it within WithReplicaSync (the script and a WAIT go out in
// one round trip); one acknowledged too little is given back as
// ErrNotReplicated. So a failover to one of those replicas keeps the hold.
// Renewals are synced too, so a holder whose replicas stop acknowledging
// gets ErrLockLost within its lease; releases are not, so after a failover
// a released lock may look held until its lease ends. WAIT is not
// consensus: a replica that did not acknowledge may be promoted. A master
// with no replica online refuses acquisitions once the client has seen a
// replica or is a Sentinel client; a server run alone pays nothing. See the
// README's guarantees section.
//
// # Fencing tokens
//
// Every acquisition, re-entry and hand-off included, draws its token from
// Redisson RFencedLock's counter redisson_lock_token:{name} (by INCR, as
// RFencedLock does, so a Java RFencedLock draws the next number), which
// lives an hour after its last use. A counter gone or below 2^50 (a Java
// RFencedLock's starts at 0) is seeded with the server's TIME in
// microseconds; fair waiters, rwlocks and hand-offs draw max(counter + 1,
// that time). So tokens never go backwards, even when Redis loses the
// counter (expiry, FLUSHALL, a restart without persistence, a failover
// that missed the last write), unless the server's clock steps back by
// more than the time since the last acquisition (an hour, for an expired
// counter) or a failover lands on a server that far behind. Tokens are
// exact int64s (Lua's doubles are exact below 2^53: the year 2255).
//
// # Keys
//
// Every key a lock writes has a TTL or goes when its hold ends: the hash
// with the last count; the token counter after an hour; the unlock and
// acquire latches (redisson_unlock_latch:{name}:...,
// relock_acquire_latch:{name}:...) after three times the unlock timeout,
// 15 s by default.
//
// # Lost replies
//
// An acquire whose reply is lost (a read timeout, a broken connection) may
// still have taken the lock, so each acquisition can run twice safely: a
// minted owner finds its own field, and an owner that other holds share (a
// re-entry) leaves its token in an acquire latch that a second run
// returns; neither a retry nor go-redis's resend counts twice. A Lock or
// TryLock that gives up after such a failure gives back in the background
// what it may have taken.
package lock
