package errs

import (
	"errors"
	"fmt"
)

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
)

// Error names the operation and the lock an error happened in.
type Error struct {
	Op   string // "lock", "unlock", "renew", ...
	Kind string // "lock", "semaphore", ... (the primitive)
	Name string // the lock name
	Err  error
}

// Error reads "relock: <op> <primitive> \"<name>\": <reason>".
func (e *Error) Error() string {
	kind := e.Kind
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

// New wraps err with the operation and the lock; nil stays nil.
func New(op, kind, name string, err error) error {
	if err == nil {
		return nil
	}
	return &Error{Op: op, Kind: kind, Name: name, Err: err}
}

// Invalid returns ErrInvalidArgument wrapped with the reason.
func Invalid(op, kind, name, reason string) error {
	return &Error{Op: op, Kind: kind, Name: name, Err: fmt.Errorf("%w: %s", ErrInvalidArgument, reason)}
}

// Reason strips the operation and lock from err when it is an *Error, so
// that it can be wrapped again under another operation without repeating
// the lock's name.
func Reason(err error) error {
	if e, ok := err.(*Error); ok {
		return e.Err
	}
	return err
}
