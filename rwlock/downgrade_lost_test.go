package rwlock_test

import (
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/testkit/redistest"
	"github.com/relock-go/relock/rwlock"
)

// TestDowngradeReplyLost: a downgrade runs but its reply is lost, so the
// caller gets an error and gives the write hold up. What the run did
// must be undone exactly: the read count it made goes (not left to its
// lease), and the write count it converted is not released a second
// time, which would take an outer write hold's count with it.
func TestDowngradeReplyLost(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		rw, lost, outer, inner := reenteredWrite(t, env, "dg-lost")
		lost.Lose.Store(1)
		_, err := rw.Downgrade(inner)
		require.ErrorIs(t, err, os.ErrDeadlineExceeded)
		require.Equal(t, 1, count(t, env.Universal, "dg-lost", "w:write"), "the outer write hold keeps its count")
		require.Zero(t, count(t, env.Universal, "dg-lost", "w"), "the converted read count was given back")
		require.Equal(t, "write", mode(t, env.Universal, "dg-lost"))
		require.NoError(t, rw.Unlock(outer), "the outer write hold is still held")
		require.False(t, exists(t, env.Universal, "dg-lost"))

		only, err := rw.Lock(as(ctx, "w"))
		require.NoError(t, err)
		lost.Lose.Store(1)
		_, err = rw.Downgrade(only) // the last write count
		require.ErrorIs(t, err, os.ErrDeadlineExceeded)
		require.False(t, exists(t, env.Universal, "dg-lost"), "freed, not left read-locked by nobody")
		onlyBookkeepingLeft(t, env.Universal, "dg-lost")
	})
}

// TestDowngradeRequestLost: the downgrade's request is lost before it
// reaches Redis, so nothing was converted; the give-up, which cannot
// tell from the reply, finds no latch of the run and releases the
// write count alone: the outer write hold keeps its own.
func TestDowngradeRequestLost(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		rw, lost, outer, inner := reenteredWrite(t, env, "dg-dropped")
		lost.Drop.Store(1)
		_, err := rw.Downgrade(inner)
		require.ErrorIs(t, err, os.ErrDeadlineExceeded)
		require.Equal(t, 1, count(t, env.Universal, "dg-dropped", "w:write"), "the inner write count went, the outer's stayed")
		require.Zero(t, count(t, env.Universal, "dg-dropped", "w"))
		require.NoError(t, rw.Unlock(outer))
		require.False(t, exists(t, env.Universal, "dg-dropped"))
		onlyBookkeepingLeft(t, env.Universal, "dg-dropped")
	})
}

// reenteredWrite is an RWMutex named name on a client whose downgrades
// go through the returned faults, and owner w's write hold taken twice:
// outer, then inner on it.
func reenteredWrite(t *testing.T, env *redistest.Env, name string) (rw *rwlock.RWMutex, faults *redistest.ScriptFaults, outer, inner context.Context) {
	t.Helper()
	c := env.NewClient(t)
	faults = redistest.NewScriptFaults(rwlock.DowngradeSource())
	c.AddHook(faults)
	rw = rwlock.New(c, name)
	outer, err := rw.Lock(as(ctxT(t), "w"))
	require.NoError(t, err)
	inner, err = rw.Lock(outer)
	require.NoError(t, err)
	return rw, faults, outer, inner
}
