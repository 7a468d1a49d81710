package redlock_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/lock"
	"github.com/relock-go/relock/redlock"
	"github.com/relock-go/relock/rwlock"
)

// Members that are one lock on one server are one vote, not several: such
// a Redlock is refused on its first call, naming the duplicate, and writes
// nothing anywhere.
func TestDuplicateMembersRefused(t *testing.T) {
	ms := startMasters(t, 3)
	ctx := ctxT(t)
	cs := ms.process(t)
	again := ms.process(t) // other clients of the same three servers
	m := lock.New(cs[0], "dup")
	rw := rwlock.New(cs[1], "dup")
	for name, members := range map[string][]redlock.Member{
		"one Mutex thrice":         {m, m, m},
		"one name on one client":   {lock.New(cs[0], "dup"), lock.New(cs[0], "dup"), lock.New(cs[2], "dup")},
		"one server, two clients":  {lock.New(cs[0], "dup"), lock.New(cs[1], "dup"), lock.New(again[0], "dup")},
		"a Mutex and a read side":  {lock.New(cs[0], "dup"), rwlock.New(again[0], "dup").ReadLocker(), lock.New(cs[2], "dup")},
		"both sides of one rwlock": {rw.ReadLocker(), rw.WriteLocker(), lock.New(cs[2], "dup")},
		"a write side and a Mutex": {lock.New(cs[0], "dup"), rw.WriteLocker(), lock.New(again[1], "dup")},
	} {
		for kind, l := range map[string]*redlock.Lock{"New": redlock.New(members), "NewMulti": redlock.NewMulti(members)} {
			_, err := l.TryLock(ctx)
			require.ErrorIs(t, err, redlock.ErrInvalidArgument, name+" "+kind)
			require.ErrorContains(t, err, `"dup"`, name+" "+kind)
			require.ErrorContains(t, err, "same lock", name+" "+kind)
			_, err = l.Lock(ctx)
			require.ErrorIs(t, err, redlock.ErrInvalidArgument, name+" "+kind)
		}
	}
	require.Equal(t, zeros(3), ms.existsOn(t, "dup", ms.all()...), "nothing written")

	// Several resources on one server remain a multi-lock's business.
	ml := redlock.NewMulti([]redlock.Member{lock.New(cs[0], "dup:a"), lock.New(again[0], "dup:b")})
	held, err := ml.TryLock(ctx)
	require.NoError(t, err)
	require.NoError(t, ml.Unlock(held))
}
