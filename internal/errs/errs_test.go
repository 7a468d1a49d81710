package errs

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestErrorNamesOperationAndLock(t *testing.T) {
	err := New("unlock", "lock", "order:1", ErrNotHeld)
	require.EqualError(t, err, `relock: unlock lock "order:1": not held`)
	require.ErrorIs(t, err, ErrNotHeld)
	var e *Error
	require.True(t, errors.As(err, &e))
	require.Equal(t, "unlock", e.Op)
	require.Nil(t, New("x", "lock", "n", nil))

	inv := Invalid("lock", "semaphore", "s", "n > size")
	require.ErrorIs(t, inv, ErrInvalidArgument)
	require.EqualError(t, inv, `relock: lock semaphore "s": invalid argument: n > size`)

	lost := New("renew", "lock", "a", fmt.Errorf("%w: key gone", ErrLockLost))
	again := New("unlock", "lock", "a", Reason(lost))
	require.EqualError(t, again, `relock: unlock lock "a": lock lost: key gone`)
	require.ErrorIs(t, again, ErrLockLost)
	require.Equal(t, ErrNotHeld, Reason(ErrNotHeld))
}

// The operation is not repeated when it is the primitive's own name.
func TestNoDoubledWord(t *testing.T) {
	err := New("lock", "lock", "x", ErrNotAcquired)
	if got, want := err.Error(), `relock: lock "x": not acquired`; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	err = New("unlock", "lock", "x", ErrNotHeld)
	if got, want := err.Error(), `relock: unlock lock "x": not held`; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}
