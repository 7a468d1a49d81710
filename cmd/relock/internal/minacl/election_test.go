package minacl_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/cmd/relock/internal/minacl"
	"github.com/relock-go/relock/election"
	"github.com/relock-go/relock/internal/testkit/redistest"
)

// TestMinimalACLRunsAnElection: a user granted exactly the documented
// ACL for an election, on names under "app:", campaigns, waits in line,
// proclaims, observes and resigns; a user without the election's record
// is refused before anything is written, with NOPERM naming the key.
func TestMinimalACLRunsAnElection(t *testing.T) {
	srv := redistest.StartServer(t)
	admin := srv.Client(t)
	ctx := ctxT(t)
	user := func(name string, acl minacl.ACL) *redis.Client {
		args := []any{"acl", "setuser", name, "reset", "on", ">pw"}
		for _, r := range acl.Rules() {
			args = append(args, r)
		}
		require.NoError(t, admin.Do(ctx, args...).Err())
		c := redis.NewClient(&redis.Options{Addr: srv.Addr, Username: name, Password: "pw"})
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	acl := minacl.For(minacl.Election, "app:", minacl.Deployment{ReplicaSync: true})
	a := election.New(user("a", acl), "app:leader", election.WithHolderLabel("pod-a"))
	b := election.New(user("b", acl), "app:leader")
	obsCtx, stop := context.WithCancel(ctx)
	defer stop()
	changes := b.Observe(obsCtx)
	require.True(t, (<-changes).Vacant())

	la, err := a.Campaign(ctx, "a")
	require.NoError(t, err)
	require.Equal(t, "a", (<-changes).Value)
	waiting := campaignAsync(ctx, b, "b")
	require.NoError(t, a.Proclaim(la, "a2"))
	require.Equal(t, "a2", (<-changes).Value)
	require.NoError(t, a.Resign(la))
	require.True(t, (<-changes).Vacant())
	r := <-waiting
	require.NoError(t, r.err)
	require.Equal(t, "b", (<-changes).Value)
	l, err := a.Leader(ctx)
	require.NoError(t, err)
	require.Equal(t, "b", l.Value)
	require.NoError(t, b.Resign(r.leading))

	fair := minacl.For(minacl.FairLock, "app:", minacl.Deployment{ReplicaSync: true})
	denied := election.New(user("c", fair), "app:leader", election.WithUnlockTimeout(time.Second))
	_, err = denied.Campaign(ctx, "c")
	require.ErrorContains(t, err, "NOPERM")
	require.ErrorContains(t, err, "relock_election:{app:leader}")
	n, err := admin.Exists(ctx, "app:leader", "relock_election:{app:leader}").Result()
	require.NoError(t, err)
	require.Zero(t, n, "the refused campaign left nothing behind")
}
