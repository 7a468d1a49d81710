// Package relock holds what every primitive of this module shares with
// its callers: the sentinel errors and Error, the type of every error the
// primitives return. The primitives themselves live in the packages lock
// (a reentrant mutex), rwlock (a read-write lock), semaphore (a weighted
// semaphore whose permits are leases), redlock (quorum and all-of locks
// over several masters) and election (leader election on the fair lock);
// package watchdog configures the renewal of their leases, and package
// fence makes a store refuse a stale holder's fencing token. Each package re-exports the sentinels, so
// errors.Is(err, lock.ErrNotHeld) and errors.Is(err, relock.ErrNotHeld)
// are the same test.
package relock
