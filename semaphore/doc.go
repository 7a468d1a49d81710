// Package semaphore is a distributed weighted semaphore on Redis, in the
// manner of golang.org/x/sync/semaphore: Acquire(ctx, n) takes n of size
// permits, waiting first come first served, so a large request is not
// starved by a stream of small ones.
//
// Every acquisition is one permit id of weight n and a lease, renewed by
// the process's watchdog (or a fixed WithLeaseTime): a process that dies
// gives its permits back when its lease ends, reclaimed by the next script
// that touches the semaphore, by Redis server time. The context Acquire
// returns carries the permit and ends when it ends (ErrLockLost when its
// lease was lost); Release on it gives exactly those n permits back.
//
// The size is stored in Redis while permits are held or wanted; a
// Semaphore built with another size for the same name gets
// ErrSizeMismatch, naming both, from its first call that reaches Redis
// meanwhile, and Resize changes it on purpose. Keys, all in the name's
// cluster slot: the hash <name> (size, used), the zset {<name>}:permits
// (permit id -> expiry), the hash {<name>}:weights (permit id -> n), the
// waiters' zset {<name>}:waiters and their marks' expiry
// {<name>}:waiter_expiry; releases publish on redisson_sc:{<name>}. A
// name another kind holds (a lock, fair lock or election, an rwlock: a
// hash at <name> without size) is refused at once with ErrWrongKind,
// naming that kind, and nothing of it is touched. On a full server
// (maxmemory with noeviction) the permits held are renewed and released
// as usual, and a new one fails with Redis's OOM, writing nothing.
//
// The goroutines of one process wait in one local queue; a release hands
// the permits it gives back to the first of them in the same script, in
// their order, as far as they fit and no waiter of another process is
// first in line in Redis, so that a waiter served this way returns
// without a round trip of its own (not where WithReplicaSync asks for a
// WAIT after each acquisition: the waiters then try themselves).
//
// Nothing of a semaphore outlives its last permit or waiter by more than
// a second: every script purges the permits that lapsed and the lapsed
// waiters at the head of the line (one behind a live waiter holds nobody
// back and goes when it reaches the head, so no script reads the whole
// line), then deletes the keys when none is left, or makes them all
// expire with the last permit or mark, up to a second later, so that a
// busy semaphore's scripts need not set the TTLs every time (the
// watchdog's renewals extend them). A size set by Resize is kept an hour
// at least. Each acquisition is one permit id, so a try run twice (a
// retry after a lost reply, go-redis's own resend) finds its permit
// instead of taking more, and an Acquire that gives up after such a
// failure releases the permit it may have left, in the background.
package semaphore
