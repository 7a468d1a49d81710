package errs

import (
	"fmt"

	"github.com/relock-go/relock"
)

// The root package's sentinels and error type, which internal packages wrap errors in.
var (
	ErrNotAcquired     = relock.ErrNotAcquired
	ErrNotHeld         = relock.ErrNotHeld
	ErrLockLost        = relock.ErrLockLost
	ErrInvalidArgument = relock.ErrInvalidArgument
	ErrNotReplicated   = relock.ErrNotReplicated
	ErrWrongKind       = relock.ErrWrongKind
	ErrWaitersNotTold  = relock.ErrWaitersNotTold
	ErrNoLeader        = relock.ErrNoLeader
)

// Error is relock.Error.
type Error = relock.Error

// New wraps err with the operation and the lock; nil stays nil.
func New(op, kind, name string, err error) error {
	if err == nil {
		return nil
	}
	return &Error{Op: op, Primitive: kind, Name: name, Err: err}
}

// Invalid returns ErrInvalidArgument wrapped with the reason.
func Invalid(op, kind, name, reason string) error {
	return &Error{Op: op, Primitive: kind, Name: name, Err: fmt.Errorf("%w: %s", ErrInvalidArgument, reason)}
}

// Reason strips an *Error's operation and lock, to rewrap err under another operation.
func Reason(err error) error {
	if e, ok := err.(*Error); ok {
		return e.Err
	}
	return err
}

// The kinds an acquire script reports in its {-2, kind} reply when the
// name's hash is another primitive's, told apart by the fields each keeps.
const (
	KindLock      = 1 // owner fields only: a lock, a fair lock or an election
	KindRWLock    = 2 // a mode field
	KindSemaphore = 3 // a size field
)

// WrongKind is ErrWrongKind naming the kind an acquire script found.
func WrongKind(kind int64) error {
	other := map[int64]string{
		KindLock:      "a lock (plain, fair or an election's)",
		KindRWLock:    "an rwlock",
		KindSemaphore: "a semaphore",
	}[kind]
	if other == "" {
		other = fmt.Sprintf("another kind (%d)", kind)
	}
	return fmt.Errorf("%w: the name is held by %s; one name serves one kind", ErrWrongKind, other)
}
