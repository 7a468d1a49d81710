// Package relock holds what every primitive of this module shares with
// its callers: the sentinel errors and Error, the type of every error the
// primitives return. The primitives themselves live in the packages lock
// (a reentrant mutex), rwlock (a read-write lock), semaphore (a weighted
// semaphore whose permits are leases) and redlock (quorum and all-of
// locks over several masters); package watchdog configures the renewal
// of their leases. Each package re-exports the sentinels, so
// errors.Is(err, lock.ErrNotHeld) and errors.Is(err, relock.ErrNotHeld)
// are the same test.
package relock
