// Package redlock holds one lock across several members: New is the
// Redlock algorithm over independent Redis masters (held when a quorum,
// len/2+1, is held), NewMulti the all-of multi-lock that takes several
// resources together or none. Any relock primitive is a member:
// *lock.Mutex, and the ReadLocker and WriteLocker sides of an
// *rwlock.RWMutex; all members of one Lock are held by one owner.
//
// An acquire tries every member at once, each bounded by a node timeout
// (lease/10 by default), and holds when the quorum was won within the
// validity time: lease - elapsed - drift (drift = lease/100 + 2 ms). On
// failure every member is released, those that seemed to fail too, before
// the next round (after a random delay), or in the background once the
// wait is over. The first round is made whatever WithWaitTimeout says.
// One owner's rounds share its owner id on the members (so that a hold
// re-enters), so a release of a failed round that reaches a stalled member
// late (it timed out here, but the member ran it after resuming) can undo
// that owner's next hold on that member; the watchdog then finds the
// member gone and reports ErrLockLost once the quorum is lost. The watchdog renews
// every member won and needs the quorum; losing it ends the hold's context
// with ErrLockLost. Unlock releases every member in parallel and succeeds
// when a quorum (for NewMulti: all) released.
//
// What Redlock guarantees, and what it does not. Its safety argument rests
// on time: the holder must finish within the validity time, and the
// masters' clocks must run at about the same rate. A process pause (a GC,
// a stalled VM), a network delay, or a clock jump on a master can let a
// holder believe it still holds the lock after the lease ended on the
// masters, while another owner acquires it; Martin Kleppmann's "How to do
// distributed locking" makes this argument, and Redis's own Redlock page
// answers it only in part. A master restarted without persistence forgets
// its keys, so a lock could be granted twice; restart masters only after
// a lease has passed (delayed restarts), or run them with AOF fsync always.
// Redisson has deprecated its RedissonRedLock for these reasons. The real
// protection is a fencing token checked by the resource: the token of a
// Redlock hold is the largest of the members' tokens. Each member draws
// max(its counter + 1, its server time in microseconds) (see package
// lock), so tokens from different masters follow one another only as
// closely as the masters' clocks agree: the token is advisory here. Use a
// single-master lock's token (or a store-side check) where correctness
// depends on it. Use Redlock where a rare double grant costs efficiency,
// not correctness.
package redlock
