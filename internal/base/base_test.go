package base

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/errs"
	"github.com/relock-go/relock/internal/lease"
)

func TestCheckAndWrap(t *testing.T) {
	unmade := Ident{Primitive: "rwlock", Invalid: "RWMutex not made by rwlock.New"}
	id := Ident{Primitive: "rwlock", Name: "a"}
	var noCtx context.Context
	err := id.Check("rlock", noCtx, unmade)
	require.ErrorIs(t, err, errs.ErrInvalidArgument)
	require.Contains(t, err.Error(), "nil context")
	require.NoError(t, id.Check("rlock", context.Background(), unmade))

	var e *errs.Error
	require.ErrorAs(t, id.Wrap("rlock", errs.ErrNotAcquired), &e)
	require.Equal(t, "rlock", e.Op)
	require.Equal(t, "a", e.Name)
	require.NoError(t, id.Wrap("rlock", nil))
}

func TestReleasedAndTTL(t *testing.T) {
	wd := lease.New()
	l := wd.Start(lease.Spec{Targets: []lease.Target{{Keys: []string{"k"}}}, Timeout: time.Minute}, wd.Now())
	defer l.Stop()
	require.NoError(t, Released(1, nil, l, "gone"))
	require.NoError(t, Released(0, nil, l, "gone"))
	boom := errors.New("boom")
	require.ErrorIs(t, Released(-1, boom, l, "gone"), boom)
	err := Released(-1, nil, l, "the permit had expired in Redis")
	require.ErrorIs(t, err, errs.ErrLockLost)
	require.Contains(t, err.Error(), "the permit had expired in Redis")

	require.Equal(t, time.Duration(0), TTL(-2*time.Millisecond))
	require.Equal(t, time.Duration(0), TTL(-2))
	require.Equal(t, time.Duration(-1), TTL(-1*time.Millisecond))
	require.Equal(t, 5*time.Second, TTL(5*time.Second))
}
