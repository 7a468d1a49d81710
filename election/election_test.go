package election_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/relock-go/relock/election"
	"github.com/relock-go/relock/internal/testkit/redistest"
	"github.com/relock-go/relock/lock"
)

func TestMain(m *testing.M) {
	if addr := os.Getenv(candidateEnv); addr != "" {
		os.Exit(candidateProcess(addr)) // a candidate process of TestLeaderProcessKilled
	}
	if addr := os.Getenv(writerEnv); addr != "" {
		os.Exit(writerProcess(addr)) // the leader of TestStoppedLeaderLearnsItLostBeforeWriting
	}
	goleak.VerifyTestMain(redistest.Main(m), goleak.IgnoreAnyFunction("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).tryDial"))
}

// each runs f on miniredis, a redis-server and a cluster.
func each(t *testing.T, f func(t *testing.T, env *redistest.Env)) {
	for _, b := range redistest.AllBackends() {
		t.Run(b.Name, func(t *testing.T) { f(t, b.New(t)) })
	}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// campaignAsync campaigns on its own goroutine.
func campaignAsync(ctx context.Context, e *election.Election, value string) <-chan result {
	out := make(chan result, 1)
	go func() {
		leading, err := e.Campaign(ctx, value)
		out <- result{leading, err}
	}()
	return out
}

type result struct {
	leading context.Context
	err     error
}

func TestCampaignElectsAndResignHandsOver(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		a := election.New(env.U(), "jobs")
		b := election.New(env.U(), "jobs")

		_, err := a.Leader(ctx)
		require.ErrorIs(t, err, election.ErrNoLeader)
		require.ErrorContains(t, err, `leader election "jobs"`)

		la, err := a.Campaign(ctx, "pod-a")
		require.NoError(t, err)
		ea, ok := election.Epoch(la)
		require.True(t, ok)
		require.Positive(t, ea)
		got, err := b.Leader(ctx)
		require.NoError(t, err)
		require.Equal(t, "pod-a", got.Value)
		require.Equal(t, ea, got.Epoch)
		require.WithinDuration(t, time.Now(), got.Since, 5*time.Second)

		waiting := campaignAsync(ctx, b, "pod-b")
		select {
		case r := <-waiting:
			t.Fatalf("a second candidate was elected while the first leads: %v", r.err)
		case <-time.After(100 * time.Millisecond):
		}
		require.NoError(t, a.Resign(la))
		require.Error(t, la.Err(), "the leading context ends with Resign")
		r := <-waiting
		require.NoError(t, r.err)
		eb, _ := election.Epoch(r.leading)
		require.Greater(t, eb, ea, "epochs grow across leaderships")
		got, err = a.Leader(ctx)
		require.NoError(t, err)
		require.Equal(t, election.Leader{Value: "pod-b", Epoch: eb, Since: got.Since}, got)

		require.ErrorIs(t, a.Resign(la), election.ErrNotHeld, "a leadership resigns once")
		require.NoError(t, b.Resign(r.leading))
		_, err = a.Leader(ctx)
		require.ErrorIs(t, err, election.ErrNoLeader)
		redistest.RequireBoundedKeyspace(t, ctx, env.U(), time.Hour)
	})
}

func TestProclaimOnlyByTheCurrentLeadership(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		a := election.New(env.U(), "cfg")
		b := election.New(env.U(), "cfg")
		la, err := a.Campaign(ctx, "v1")
		require.NoError(t, err)
		require.NoError(t, a.Proclaim(la, "v2"))
		got, err := b.Leader(ctx)
		require.NoError(t, err)
		require.Equal(t, "v2", got.Value)

		// Superseded: the hold is taken away elsewhere and another
		// candidate elected before this leader's process notices.
		waiting := campaignAsync(ctx, b, "b1")
		_, err = lock.NewFair(env.U(), "cfg").ForceUnlock(ctx)
		require.NoError(t, err)
		r := <-waiting
		require.NoError(t, r.err)
		err = a.Proclaim(la, "stale")
		require.ErrorIs(t, err, election.ErrNotHeld)
		got, err = a.Leader(ctx)
		require.NoError(t, err)
		require.Equal(t, "b1", got.Value, "a refused Proclaim writes nothing")

		require.ErrorIs(t, b.Proclaim(ctx, "x"), election.ErrNotHeld, "a context that carries no leadership")
		require.ErrorIs(t, a.Proclaim(r.leading, "x"), election.ErrNotHeld, "another Election's leadership")
		require.NoError(t, b.Resign(r.leading))
		require.ErrorIs(t, b.Proclaim(r.leading, "x"), election.ErrNotHeld, "a resigned leadership")
	})
}

func TestLeadingContextEndsWithErrLockLost(t *testing.T) {
	env := redistest.Backends()[1].New(t) // a redis-server: its TTLs run on their own
	ctx := ctxT(t)
	e := election.New(env.Client, "lost", election.WithWatchdogTimeout(300*time.Millisecond))
	leading, err := e.Campaign(ctx, "x")
	require.NoError(t, err)
	_, err = lock.NewFair(env.Client, "lost").ForceUnlock(ctx)
	require.NoError(t, err)
	select {
	case <-leading.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the leadership's loss was not noticed")
	}
	require.ErrorIs(t, context.Cause(leading), election.ErrLockLost)
	_, err = e.Leader(ctx)
	require.ErrorIs(t, err, election.ErrNoLeader, "the record does not outlive its hold")
	require.ErrorIs(t, e.Resign(leading), election.ErrLockLost)
}

func TestBadInputIsRefused(t *testing.T) {
	_, client := redistest.Miniredis(t)
	ctx := ctxT(t)
	check := func(err error, want string) {
		t.Helper()
		require.ErrorIs(t, err, election.ErrInvalidArgument)
		require.ErrorContains(t, err, want)
	}
	_, err := election.New(nil, "x").Campaign(ctx, "v")
	check(err, "nil redis client")
	_, err = election.New(client, "").Leader(ctx)
	check(err, "name")
	check(election.New(client, "x", election.WithWatchdogTimeout(-1)).Err(), "")
	_, err = election.New(client, "x").Campaign(ctx, strings.Repeat("v", election.MaxValue+1))
	check(err, "longer than")
	var nilE *election.Election
	_, err = nilE.Campaign(ctx, "v")
	check(err, "nil *election.Election")
	_, err = new(election.Election).Leader(ctx)
	check(err, "not made by election.New")
	//lint:ignore SA1012 a nil context is the bad input under test
	_, err = election.New(client, "x").Campaign(nil, "v") //nolint:staticcheck
	check(err, "nil context")
	check(election.New(client, "x").Run(ctx, "v", nil), "nil lead")

	e := election.New(client, "x")
	leading, err := e.Campaign(ctx, "v")
	require.NoError(t, err)
	_, err = e.Campaign(leading, "again")
	check(err, "already leads")
	require.NoError(t, e.Resign(leading))
	keys, err := client.Keys(ctx, "*").Result()
	require.NoError(t, err)
	require.NotContains(t, keys, "relock_election:{x}")
}

// TestReplicaSyncedLeadership: on a master with a replica, the leader's
// hold and record reach the replica before Campaign returns (replica sync
// is on by default).
func TestReplicaSyncedLeadership(t *testing.T) {
	g := redistest.StartReplicated(t, 1)
	ctx := ctxT(t)
	e := election.New(g.Master.Client(t), "synced")
	leading, err := e.Campaign(ctx, "a")
	require.NoError(t, err)
	replica := g.Replicas[0].Client(t)
	n, err := replica.Exists(ctx, "synced").Result()
	require.NoError(t, err)
	require.EqualValues(t, 1, n, "the hold is on the replica")
	require.Eventually(t, func() bool {
		return replica.HGet(ctx, "relock_election:{synced}", "value").Val() == "a"
	}, 5*time.Second, 5*time.Millisecond, "the record follows")
	require.NoError(t, e.Resign(leading))
}

// TestHandedOverLeadershipKeepsItsRecord: a leadership handed over inside
// a release (the next candidate waits in this process) keeps its record
// alive with its hold, past several leases.
func TestHandedOverLeadershipKeepsItsRecord(t *testing.T) {
	for _, b := range redistest.AllBackends()[1:] { // real servers: their TTLs run on their own
		t.Run(b.Name, func(t *testing.T) {
			env := b.New(t)
			ctx := ctxT(t)
			const lease = 600 * time.Millisecond
			a := election.New(env.U(), "handed", election.WithWatchdogTimeout(lease))
			c := election.New(env.U(), "handed", election.WithWatchdogTimeout(lease))
			la, err := a.Campaign(ctx, "a")
			require.NoError(t, err)
			waiting := campaignAsync(ctx, c, "c")
			time.Sleep(50 * time.Millisecond) // c is in line
			require.NoError(t, a.Resign(la))
			r := <-waiting
			require.NoError(t, r.err)
			time.Sleep(3 * lease)
			require.NoError(t, r.leading.Err())
			l, err := a.Leader(ctx)
			require.NoError(t, err, "the record lives as long as the hold")
			require.Equal(t, "c", l.Value)
			require.NoError(t, c.Resign(r.leading))
		})
	}
}
