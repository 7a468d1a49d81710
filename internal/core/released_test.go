package core

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/errs"
	"github.com/relock-go/relock/internal/lease"
)

func TestReleasedReadsTheReply(t *testing.T) {
	wd := lease.New()
	l := wd.Start(lease.Spec{Targets: []lease.Target{{Keys: []string{"k"}}}, Timeout: time.Minute}, wd.Now())
	defer l.Stop()
	require.NoError(t, Released(1, nil, l, "gone"))
	require.NoError(t, Released(0, nil, l, "gone"))
	require.ErrorIs(t, Released(2, nil, nil, "gone"), errs.ErrWaitersNotTold)
	boom := errors.New("boom")
	require.ErrorIs(t, Released(-1, boom, l, "gone"), boom)
	err := Released(-1, nil, l, "the permit had expired in Redis")
	require.ErrorIs(t, err, errs.ErrLockLost)
	require.Contains(t, err.Error(), "the permit had expired in Redis")
}
