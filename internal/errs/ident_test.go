package errs

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestIdentCheckAndWrap(t *testing.T) {
	unmade := Ident{Primitive: "rwlock", Invalid: "RWMutex not made by rwlock.New"}
	id := Ident{Primitive: "rwlock", Name: "a"}
	var noCtx context.Context
	err := id.Check("rlock", noCtx, unmade)
	require.ErrorIs(t, err, ErrInvalidArgument)
	require.Contains(t, err.Error(), "nil context")
	require.NoError(t, id.Check("rlock", context.Background(), unmade))

	var e *Error
	require.ErrorAs(t, id.Wrap("rlock", ErrNotAcquired), &e)
	require.Equal(t, "rlock", e.Op)
	require.Equal(t, "a", e.Name)
	require.NoError(t, id.Wrap("rlock", nil))
}
