package relock

import (
	"errors"
	"fmt"
)

// The sentinel errors, the same values in every package of this module
// (lock.ErrNotHeld == relock.ErrNotHeld), so that errors.Is works whatever
// primitive returned the error.
var (
	// ErrNotAcquired: the lock is held by another owner (TryLock) or the
	// wait bound passed before it was free.
	ErrNotAcquired = errors.New("not acquired")
	// ErrNotHeld: the context's owner does not hold the lock.
	ErrNotHeld = errors.New("not held")
	// ErrLockLost: the hold ended without an unlock (lease lapsed, key
	// deleted, Redis lost it); the holder must stop acting on it.
	ErrLockLost = errors.New("lock lost")
	// ErrInvalidArgument: bad input; nothing was written to Redis.
	ErrInvalidArgument = errors.New("invalid argument")
	// ErrNotReplicated: the acquisition was written, but fewer replicas
	// of the server acknowledged it than WithMinReplicas asks within the
	// replica sync timeout (WithReplicaSync), so it was undone: a
	// failover could have lost it. It matches ErrNotAcquired too.
	ErrNotReplicated = fmt.Errorf("%w: too few replicas acknowledged", ErrNotAcquired)
	// ErrWrongKind: the name is held by another kind of primitive (a
	// lock, fair lock or election, an rwlock, a semaphore): one name
	// serves one kind, so the acquisition was refused at once and
	// nothing was written. It matches ErrNotAcquired too, so a TryLock
	// caller that only checks for contention still backs off; the
	// error's text names both kinds.
	ErrWrongKind = fmt.Errorf("%w: name held by another kind", ErrNotAcquired)
	// ErrWaitersNotTold: the release was made, but its notification was
	// refused (PUBLISH denied by the user's ACL on a server too old to
	// check before writing, Redis 6): waiters wake when the lock's lease
	// ends instead of at once.
	ErrWaitersNotTold = errors.New("released, waiters not told")
	// ErrNoLeader: an election has no leader now (none elected, or the
	// last one resigned or lost its lease).
	ErrNoLeader = errors.New("no leader")
)

// Error is the type of every error the primitives return: it names the
// operation and the lock, and wraps the reason (a sentinel above, a Redis
// or network error), so that errors.Is finds the sentinel and errors.As
// finds the Error.
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
