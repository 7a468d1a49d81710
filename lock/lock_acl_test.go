package lock_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/testkit/redistest"
	"github.com/relock-go/relock/lock"
)

// aclClient makes a user of the server behind admin that may do
// everything but what rules take away, and returns a client logged in as
// it.
func aclClient(t *testing.T, ctx context.Context, admin *redis.Client, user string, rules ...string) *redis.Client {
	t.Helper()
	args := []any{"acl", "setuser", user, "reset", "on", ">pw", "~*", "&*", "+@all"}
	for _, r := range rules {
		args = append(args, r)
	}
	require.NoError(t, admin.Do(ctx, args...).Err())
	c := redis.NewClient(&redis.Options{Addr: admin.Options().Addr, Username: user, Password: "pw"})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// A user refused INFO and ROLE cannot learn whether the lock's server has
// replicas to wait for. TryLock fails, naming the permission to grant and
// the opt-out, instead of taking the lock unsynced without a word.
func TestReplicaCountDeniedFailsTheAcquisition(t *testing.T) {
	ctx := ctxT(t)
	g := redistest.StartReplicated(t, 1)
	admin := g.Master.Client(t)
	c := aclClient(t, ctx, admin, "noinfo", "-info", "-role")

	_, err := lock.New(c, "job").TryLock(ctx)
	require.Error(t, err)
	require.ErrorContains(t, err, `trylock lock "job"`)
	require.ErrorContains(t, err, "+info")
	require.ErrorContains(t, err, "WithReplicaSync(0)")
	require.Zero(t, admin.Exists(ctx, "job").Val(), "nothing written")

	start := time.Now()
	waitCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	_, err = lock.New(c, "job").Lock(waitCtx)
	require.ErrorContains(t, err, "+info", "Lock fails too")
	require.Less(t, time.Since(start), time.Second, "at once: waiting will not grant it")

	held, err := lock.New(c, "job", lock.WithReplicaSync(0)).TryLock(ctx)
	require.NoError(t, err, "opted out")
	require.NoError(t, lock.New(c, "job", lock.WithReplicaSync(0)).Unlock(held))
}

// A WAIT refused by the ACL is reported as the refusal it is, naming
// WAIT, and the acquisition is given back.
func TestWaitDeniedReportedAsNoPerm(t *testing.T) {
	ctx := ctxT(t)
	g := redistest.StartReplicated(t, 1)
	admin := g.Master.Client(t)
	c := aclClient(t, ctx, admin, "nowait", "-wait")

	_, err := lock.New(c, "job").TryLock(ctx)
	require.Error(t, err)
	require.ErrorContains(t, err, `trylock lock "job"`)
	require.ErrorContains(t, err, "WAIT")
	require.ErrorContains(t, err, "+wait")
	require.ErrorContains(t, err, "NOPERM")
	require.NotContains(t, err.Error(), "too few replicas")
	require.NotErrorIs(t, err, lock.ErrNotReplicated)
	require.Zero(t, admin.Exists(ctx, "job").Val(), "given back")
}

// A replica whose sync ends after the first lock was taken is waited for
// from within a second of its coming online, not at the next periodic
// reading of the replica count (10 s later).
func TestReplicaSyncedAfterFirstLockIsWaitedFor(t *testing.T) {
	ctx := ctxT(t)
	// The master holds the snapshot back 2 s: its replica stays connected
	// but not online (wait_bgsave) meanwhile.
	g := redistest.StartReplicated(t, 0, redistest.WithArgs("--repl-diskless-sync", "yes", "--repl-diskless-sync-delay", "2"))
	admin := g.Master.Client(t)
	r := redistest.StartServer(t, redistest.WithArgs("--replicaof", "127.0.0.1", strconv.Itoa(g.Master.Port)))
	g.Replicas = append(g.Replicas, r)
	require.Eventually(t, func() bool {
		n, _ := admin.Info(ctx, "replication").Result()
		return containsAll(n, "connected_slaves:1", "state=wait_bgsave")
	}, 5*time.Second, 10*time.Millisecond)

	c := g.Master.Client(t)
	mu := lock.New(c, "job")
	held, err := mu.TryLock(ctx)
	require.NoError(t, err)
	require.NoError(t, mu.Unlock(held))
	require.Zero(t, waitCalls(t, ctx, admin), "no replica online at the first lock")

	g.WaitInSync(t, 20*time.Second) // sends WAITs of its own
	time.Sleep(time.Second)
	waits := waitCalls(t, ctx, admin)
	held, err = mu.TryLock(ctx)
	require.NoError(t, err)
	require.NoError(t, mu.Unlock(held))
	held, err = mu.TryLock(ctx)
	require.NoError(t, err)
	require.NoError(t, mu.Unlock(held))
	require.Greater(t, waitCalls(t, ctx, admin), waits, "a second after the replica came online, acquisitions wait for it")

	// And a stalled replica now makes the acquisition fail as not
	// replicated: it is really counted on.
	r.Pause(t)
	_, err = lock.New(c, "job2", lock.WithReplicaSync(200*time.Millisecond)).TryLock(ctx)
	require.ErrorIs(t, err, lock.ErrNotReplicated)
	r.Resume()
}

func containsAll(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}
