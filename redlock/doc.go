// Package redlock holds one lock across several members: New is the
// Redlock algorithm over independent Redis masters (held when a quorum,
// len/2+1, is held), NewMulti the all-of multi-lock that takes several
// resources together or none. Any relock primitive is a member:
// *lock.Mutex, and the ReadLocker and WriteLocker sides of an
// *rwlock.RWMutex; all members of one Lock are held by one owner.
//
// An acquire tries every member at once, each bounded by a node timeout
// (DefaultNodeTimeout, 250 ms, or lease/10 when shorter), and returns as
// soon as its outcome is decided: the quorum won, or out of reach. The
// other members then get a grace as long again as the decision took (plus
// 10 ms): healthy ones answer within it and join the hold; a stalled one
// is left behind, and what its attempt takes later is given back at once.
// A hold is valid when the quorum was won within the validity time: lease
// - elapsed - drift (drift = lease/100 + 2 ms). On failure the members
// won, and those whose reply may have been lost, are given back in the
// background, and the next round follows after a random delay. The first
// round is made whatever WithWaitTimeout says.
//
// Each round of a fresh acquisition has an owner id of its own on the
// members, so a give-back that reaches a member late (after a timeout, or
// from a stalled master once it resumes) finds only its own round and can
// never undo a later hold of the same caller. A context that already
// carries an owner (a hold of this Lock, or of the other side of a member
// RWMutex) acquires as that owner, so that the members count it as a
// re-entry; such a round gives back only the members it is known to have
// counted on. The watchdog renews every member won and needs the quorum;
// losing it ends the hold's context with ErrLockLost, and what survives of
// the hold is given back at once. Unlock releases the members won in
// parallel and returns as soon as a quorum (for NewMulti: all) released,
// or can no longer; the rest finish in the background, bounded by the
// unlock timeout. Drain waits for what a Lock left in the background,
// before a program or a test ends.
//
// Options given to the members are honoured: a member's lease (lease time
// or watchdog timeout), unlock timeout and watchdog become the Redlock's
// when New was given none of its own. Members that disagree with each
// other, or with the Redlock's options, are refused with
// ErrInvalidArgument naming the member, since one hold cannot have two
// leases; nothing is written then. A member's other options (its wait
// timeout, tracer and meter) serve only its own calls.
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
// max(its counter + 1, its server time in microseconds), so tokens from
// different masters follow one another only as closely as the masters'
// clocks agree: the token is advisory here. Use a
// single-master lock's token (or a store-side check) where correctness
// depends on it. Use Redlock where a rare double grant costs efficiency,
// not correctness.
package redlock
