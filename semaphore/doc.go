// Package semaphore is a distributed weighted semaphore on Redis, in the
// manner of golang.org/x/sync/semaphore: Acquire(ctx, n) takes n of size
// permits, waiting first come first served, so a large request is not
// starved by a stream of small ones.
//
// Every acquisition is one permit id of weight n and a lease, renewed by
// the watchdog (or a fixed WithLeaseTime), so a dead process's permits
// come back when its lease ends, by Redis server time. The context Acquire
// returns carries the permit and ends with it (ErrLockLost when its lease
// was lost); Release on it gives exactly those n permits back.
//
// The size is stored in Redis while permits are held or wanted; a
// Semaphore built with another size for the same name gets ErrSizeMismatch,
// naming both, from its first call that reaches Redis meanwhile, and
// Resize changes it on purpose. Keys, all in the name's cluster slot: the
// hash <name> (size, used), the zset {<name>}:permits (permit id ->
// expiry), the hash {<name>}:weights (permit id -> n), the waiters' zset
// {<name>}:waiters and their marks' expiry {<name>}:waiter_expiry;
// releases publish on redisson_sc:{<name>}. A name another kind holds (a
// hash at <name> without size) is refused at once with ErrWrongKind,
// naming that kind, and left untouched. On a full server (maxmemory with
// noeviction) held permits are renewed and released as usual, and a new
// one fails with Redis's OOM, writing nothing.
//
// One process's goroutines wait in one local queue; a release hands the
// permits it frees to the first of them in its own script, as far as they
// fit and no other process's waiter is first in line in Redis, sparing them
// a round trip (not with WithReplicaSync, which needs a WAIT after each
// acquisition).
//
// Nothing of a semaphore outlives its last permit or waiter by more than a
// second, except a size set by Resize, kept an hour at least. A try run
// twice (a lost reply's retry or resend) finds its own permit instead of
// taking more, and an Acquire that gives up after such a failure releases
// the permit it may have left, in the background.
package semaphore
