package relock

import (
	"errors"
	"fmt"
)

// The sentinel errors: the same values in every package of this module.
var (
	// ErrNotAcquired: held by another owner (TryLock), or the wait bound
	// passed before the lock was free.
	ErrNotAcquired = errors.New("not acquired")
	// ErrNotHeld: the context's owner does not hold the lock.
	ErrNotHeld = errors.New("not held")
	// ErrLockLost: the hold ended without an unlock (lease lapsed, key
	// deleted, Redis lost it); the holder must stop acting on it.
	ErrLockLost = errors.New("lock lost")
	// ErrInvalidArgument: bad input; nothing was written to Redis.
	ErrInvalidArgument = errors.New("invalid argument")
	// ErrNotReplicated: fewer replicas than WithMinReplicas acknowledged
	// the acquisition within WithReplicaSync's timeout, so it was undone
	// (a failover could lose it). It matches ErrNotAcquired.
	ErrNotReplicated = fmt.Errorf("%w: too few replicas acknowledged", ErrNotAcquired)
	// ErrWrongKind: the name is held by another kind of primitive (one
	// name serves one kind); refused at once, nothing written. It matches
	// ErrNotAcquired; its text names both kinds.
	ErrWrongKind = fmt.Errorf("%w: name held by another kind", ErrNotAcquired)
	// ErrWaitersNotTold: released, but the notification was refused
	// (PUBLISH denied by ACL on Redis 6, which cannot check before
	// writing): waiters wake when the lease ends instead of at once.
	ErrWaitersNotTold = errors.New("released, waiters not told")
	// ErrNoLeader: an election has no leader now (none elected, or the
	// last one resigned or lost its lease).
	ErrNoLeader = errors.New("no leader")
)

// Error is the type of every error the primitives return: it names the
// operation and the lock and wraps the reason (a sentinel, a Redis or
// network error), for errors.Is and errors.As.
type Error struct {
	Op        string // "lock", "unlock", "renew", ...
	Primitive string // "lock", "rwlock", "semaphore", "redlock", ...
	Name      string // the lock name
	Err       error  // the reason
}

// Error reads "relock: <op> <primitive> \"<name>\": <reason>".
func (e *Error) Error() string {
	kind := e.Primitive
	if kind == "" {
		kind = "lock"
	}
	if e.Op == kind { // "relock: lock "x"", not "relock: lock lock "x""
		return fmt.Sprintf("relock: %s %q: %v", kind, e.Name, e.Err)
	}
	return fmt.Sprintf("relock: %s %s %q: %v", e.Op, kind, e.Name, e.Err)
}

// Unwrap returns the reason, so errors.Is finds the sentinel in it.
func (e *Error) Unwrap() error { return e.Err }
