// Package relock holds what every primitive of this module shares: the
// sentinel errors and Error, the type of every error they return. The
// primitives live in lock (a reentrant mutex), rwlock (a read-write lock),
// semaphore (a weighted semaphore whose permits are leases), redlock
// (quorum and all-of locks over several masters) and election (leader
// election on the fair lock); watchdog configures lease renewal, and fence
// makes a store refuse a stale holder's fencing token. Every package
// re-exports the sentinels, so errors.Is(err, lock.ErrNotHeld) and
// errors.Is(err, relock.ErrNotHeld) are the same test.
package relock
