// Package lock is a distributed, reentrant mutex on Redis: sync.Mutex made
// distributed, with Redisson's RLock key layout so that a Java service
// using Redisson and a Go service using relock exclude each other on the
// same name.
//
// Ownership travels in the context. Lock returns a context that carries
// the hold: pass it on, and a nested Lock of the same lock re-enters
// instead of deadlocking; Unlock takes it back. Re-entry is per lock: the
// hold of lock Y makes nobody an owner of lock X, so goroutines fanned out
// from Y's hold (an errgroup) exclude each other on X. Goroutines handed
// X's own hold share it, as if handed a held mutex; NewOwner gives one an
// owner of its own. Two goroutines that start from their own contexts are
// two owners.
//
// The context given to Lock bounds the wait only, as in x/sync/semaphore,
// etcd's concurrency.Mutex and redsync: once Lock returns, its
// cancellation and deadline do not reach the hold (the returned context
// keeps its values). A hold ends by Unlock, by loss, or when Do returns;
// WithHoldScopedToContext ends it with the acquiring context instead. The
// returned context is done when the hold ends, with cause ErrLockLost if
// the lease was lost (the holder must stop writing), and carries a
// fencing token (FencingToken) that a store can use to refuse writes from
// a holder that lost the lock.
//
// The lock is a Redis hash named after the lock, field <owner> = count,
// with a TTL: 30 s by default, renewed every 10 s by the process's
// watchdog while held, or a fixed WithLeaseTime. Waiters subscribe to the
// unlock channel redisson_lock__channel:{name} and wake on the message,
// with the TTL as the fallback; the goroutines of one process wait in line,
// first come first served. When the head of that line waits, Unlock hands
// the lock straight to it in the same script (a new owner and fencing
// token, no unlock message: the lock is never free for another to barge
// in), so a contended critical section costs one round trip; after 16
// such hand-offs in a row, or 50 ms of them, the lock is released through
// Redis so that waiters of other processes may get their turn. Across
// processes the plain lock is not fair: a release through Redis wakes
// every process's waiters at once and the fastest try wins, so a lone
// waiter of another process can wait much longer than the goroutines
// that take turns in the holder's process (over a second against their
// 16-70 ms, measured with 16 local goroutines). Use NewFair where order
// across processes matters.
//
// # One name, one kind
//
// A name serves one kind of primitive. An acquisition of a name that an
// rwlock or a semaphore holds is refused at once with ErrWrongKind (it
// matches ErrNotAcquired too), naming that kind, and writes nothing; the
// rwlock and the semaphore refuse a lock's name likewise. A plain lock, a
// fair lock and an election keep the same hash, so they exclude each other
// on one name (a fair lock's order is kept only among fair waiters).
//
// # Fair locks
//
// NewFair makes a Mutex that serves its waiters first come, first served
// across processes, in Redisson RFairLock's layout: the waiters' ids in
// the list redisson_lock_queue:{name}, their deadlines (server time) in
// the zset redisson_lock_timeout:{name}, and an unlock message only for
// the first of them, on redisson_lock__channel:{name}:<waiter id> (to a
// relock waiter, the release hands the lock itself: see NewFair). A
// relock waiter's id is a seat of its process, reused by its next waiter
// on the same subscription, and its owner is listed beside it in
// relock_fair_waiter:{name}. A waiter
// renews its deadline by trying again at least every second; one that
// died is dropped when its deadline passes, 3 s after its last renewal,
// and one that gives up leaves the list at once. TryLock takes the lock
// only when nobody waits, and takes no place. Everything else (re-entry,
// the watchdog, tokens, replica sync, Redlock membership) is the lock's.
//
// # Replicas
//
// Where the server holding the name's slot has replicas online, an
// acquisition (a re-entry too) is granted only once WithMinReplicas of
// them (default 1) have acknowledged it, within WithReplicaSync (default
// 1 s): the acquire script and WAIT <replicas> <timeout> go out in one
// round trip, and an acquisition acknowledged too little is given back
// and reported as ErrNotReplicated (Lock tries again within its wait
// bound). So a failover to one of those replicas keeps the hold. Its
// renewals are synced too: a renewal counts once a replica acknowledged
// it (one WAIT per renewal pipeline), so a holder whose replicas stop
// acknowledging is told ErrLockLost within its lease rather than trust a
// lease a failover would not keep. Releases are not synced: after a
// failover a released lock may look held until its lease runs out. WAIT
// is not consensus: a replica that did not acknowledge may
// be promoted. A master with no replica online is written without WAIT
// only where the client never saw a replica and is no Sentinel client (a
// server run alone): once
// it has, such a master is one that lost its replica or one side of a
// failover, and the acquisition is refused (ErrNotReplicated) until a
// replica is back. The README's guarantees section says more. A server
// without replicas pays nothing.
//
// # Fencing tokens
//
// Every acquisition, re-entry and hand-off included, draws its token from
// Redisson RFencedLock's counter redisson_lock_token:{name}. A lock's
// acquire script INCRs it, as RFencedLock does; a counter that is gone,
// or below 2^50 (not seeded from a clock: a Java RFencedLock's from 0),
// is seeded with the server's time in microseconds from Redis's TIME. The
// scripts of a fair lock's waiter, an rwlock and a hand-off draw
// max(counter + 1, that time). Every acquisition gives the counter a TTL
// of an hour, so no counter outlives the last use of its lock by more than
// an hour, and a Java RFencedLock draws the next number.
//
// Why tokens never go backwards, even when the counter is lost: while the
// counter lives, each token is above the last one stored. When Redis
// forgets it (expired after an hour unused, FLUSHALL, a restart without
// persistence, a failover to a replica that missed the last write), the
// next token is the server's current time in microseconds. Every earlier
// token was at most the server time of its own acquisition (a seed, plus
// one per acquisition since it, each taking more than a microsecond), so
// the new one is larger as long as the
// server's clock has not stepped back in between. What breaks it: a clock
// set back by more than the time since the last acquisition (by more than
// an hour, for a counter that expired), or a failover to a server whose
// clock is behind the old one's by more than that. Tokens are int64 and
// exact (Lua computes in doubles, exact below 2^53: the year 2255).
//
// # Keys
//
// Every key a lock writes has a TTL or is deleted when its hold ends: the
// hash goes with the last count; the fencing counter lives an hour; unlock
// and acquire latches (redisson_unlock_latch:{name}:... and
// relock_acquire_latch:{name}:...) live three times the unlock timeout,
// 15 s by default.
//
// # Lost replies
//
// An acquire script whose reply is lost (a read timeout, a broken
// connection) may still have taken the lock. Each acquisition can be run
// twice safely: an owner minted for it finds its own field and returns
// it, and an acquisition by an owner that other holds share (a re-entry,
// a context that carries a hold) leaves its token in an acquire latch that
// a second run returns, so neither a retry nor go-redis's own resend
// counts twice. A Lock or TryLock that gives up after such a failure gives
// the grant it may have left back in the background, bounded by the
// unlock timeout, instead of leaving the lock taken by nobody for a lease.
package lock
