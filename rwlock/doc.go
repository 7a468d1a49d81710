// Package rwlock is a distributed reader/writer lock on Redis with the
// manners of sync.RWMutex: many readers or one writer, and a waiting writer
// holds back new readers so that they cannot starve it. Both sides are
// reentrant per owner (the owner travels in the context, as in package
// lock); the writer may also take the read lock, and Downgrade turns a
// write lock into a read lock in one step. A reader asking for the write
// lock gets ErrUpgradeNotSupported at once instead of deadlocking.
//
// The layout is Redisson's RReadWriteLock, so Redisson's read and write
// locks and relock's exclude each other: a hash named after the lock with
// fields mode (read or write), <owner> (read count) and <owner>:write
// (write count); one lease key per read acquisition,
// {name}:<owner>:rwlock_timeout:<n>; the channel redisson_rwlock:{name}.
// Where relock differs:
//   - each reader renews only its own lease keys, and a writer's try purges
//     readers whose lease keys have all expired, so a crashed reader's hold
//     ends with its lease even while other readers stay;
//   - a waiting writer marks itself in the zset {name}:rwlock_write_waiters
//     (score: when the mark expires, one lease after its last attempt),
//     which new readers respect (Redisson readers do not see it);
//   - every acquisition draws a fencing token from redisson_lock_token:{name}.
//
// Holds are leases kept by the shared watchdog (or a fixed WithLeaseTime);
// the returned contexts end when a hold is lost. Waiting is by pub/sub,
// one process's goroutines queued first come, first served; a writer's
// release hands the read lock to its process's readers at the front of
// that queue in its own script (unless a writer waits), sparing them a
// round trip, and wakes other processes' readers to try.
package rwlock
