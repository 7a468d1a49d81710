package redlock_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/redlock"
)

// A round's error is one line: members with one outcome are grouped, and
// a cancelled wait says so once, not once per member.
func TestErrorsAreOneLine(t *testing.T) {
	ms := startMasters(t, 3)
	ctx := ctxT(t)
	holder := redlock.New(mutexes(ms.process(t), "one"))
	held, err := holder.Lock(ctx)
	require.NoError(t, err)
	defer func() { _ = holder.Unlock(held) }()

	other := redlock.New(mutexes(ms.process(t), "one"))
	require.Equal(t, "one (3 members)", other.Name())
	_, err = other.TryLock(ctx)
	require.ErrorIs(t, err, redlock.ErrNotAcquired)
	require.NotContains(t, err.Error(), "\n")
	require.Contains(t, err.Error(), "not acquired: won 0 of 3 members, quorum 2: members 0,1,2: held by another owner")
}

func TestCancelledWaitReportedOnce(t *testing.T) {
	ms := startMasters(t, 3)
	ctx := ctxT(t)
	holder := redlock.New(mutexes(ms.process(t), "once"))
	held, err := holder.Lock(ctx)
	require.NoError(t, err)
	defer func() { _ = holder.Unlock(held) }()

	wait, cancel := context.WithCancel(ctx)
	go func() { time.Sleep(300 * time.Millisecond); cancel() }()
	_, err = redlock.New(mutexes(ms.process(t), "once")).Lock(wait)
	require.ErrorIs(t, err, context.Canceled)
	require.NotContains(t, err.Error(), "\n")
	require.LessOrEqual(t, strings.Count(err.Error(), "context canceled"), 1, err.Error())
}
