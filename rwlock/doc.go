// Package rwlock is a distributed reader/writer lock on Redis with the
// manners of sync.RWMutex: many readers or one writer, a waiting writer
// holds back new readers so that a stream of readers cannot starve it, and
// both sides are reentrant per owner (the owner travels in the context, as
// in package lock). The writer may also take the read lock, and Downgrade
// turns a write lock into a read lock in one step; a reader asking for the
// write lock gets ErrUpgradeNotSupported at once instead of deadlocking.
//
// The layout follows Redisson's RReadWriteLock, so Redisson's read and
// write locks and relock's exclude each other: a hash named after the lock
// with field mode (read or write), field <owner> (read count) and field
// <owner>:write (write count); one lease key per read acquisition,
// {name}:<owner>:rwlock_timeout:<n>; the channel redisson_rwlock:{name}.
// Where relock differs:
//   - each reader renews only its own lease keys (Redisson renews every
//     reader's from any reader), and a writer's try purges readers whose
//     lease keys have all expired, so a crashed reader's hold ends with its
//     lease even while other readers stay (readers share the lock, so only
//     a writer need look: a read acquisition never reads the other
//     readers);
//   - a waiting writer marks itself in the zset
//     {name}:rwlock_write_waiters (score: when the mark expires, one lease
//     after its last attempt), which new readers respect; Redisson has no
//     such mark and lets readers starve writers. A Redisson reader does not
//     see the mark;
//   - every acquisition draws a fencing token from
//     redisson_lock_token:{name}.
//
// Read holds and write holds are leases kept by the shared watchdog (or a
// fixed WithLeaseTime), and the returned contexts end when a hold is lost.
//
// Waiting is by pub/sub, with the goroutines of one process queued first
// come, first served. A writer's release hands the read lock to the
// readers of its process at the front of that queue in its own script
// (unless a writer waits), so they return without a round trip of their
// own; the readers of other processes are woken to try.
package rwlock
