package election_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/election"
	"github.com/relock-go/relock/internal/testkit/history"
	"github.com/relock-go/relock/internal/testkit/redistest"
	"github.com/relock-go/relock/lock"
)

// TestRunResignsOnlyAfterLeadReturns: ctx ends while leading; the
// leadership lasts until lead has drained its work.
func TestRunResignsOnlyAfterLeadReturns(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		e := election.New(env.U(), "drain")
		runCtx, cancel := context.WithCancel(ctx)
		var stillLeading atomic.Bool
		done := make(chan error, 1)
		go func() {
			done <- e.Run(runCtx, "worker", func(leading context.Context) error {
				cancel() // shutdown begins while leading
				<-leading.Done()
				time.Sleep(50 * time.Millisecond) // draining
				l, err := e.Leader(context.Background())
				ep, _ := election.Epoch(leading)
				stillLeading.Store(err == nil && l.Epoch == ep)
				return leading.Err()
			})
		}()
		require.NoError(t, <-done, "Run returns nil when its context ends")
		require.True(t, stillLeading.Load(), "the leadership lasted until lead returned")
		_, err := e.Leader(ctx)
		require.ErrorIs(t, err, election.ErrNoLeader, "and ended after")
	})
}

func TestRunReturnsLeadsOwnError(t *testing.T) {
	_, client := redistest.Miniredis(t)
	ctx := ctxT(t)
	e := election.New(client, "fail")
	boom := errors.New("boom")
	require.ErrorIs(t, e.Run(ctx, "w", func(context.Context) error { return boom }), boom)
	_, err := e.Leader(ctx)
	require.ErrorIs(t, err, election.ErrNoLeader, "resigned before returning")
}

// TestRunCampaignsAgainAfterTheLeadershipIsLost, and lead's error from
// that loss does not end Run.
func TestRunCampaignsAgainAfterTheLeadershipIsLost(t *testing.T) {
	env := redistest.Backends()[1].New(t)
	ctx := ctxT(t)
	e := election.New(env.Client, "again", election.WithWatchdogTimeout(300*time.Millisecond))
	runCtx, cancel := context.WithCancel(ctx)
	var epochs []int64
	err := e.Run(runCtx, "w", func(leading context.Context) error {
		ep, _ := election.Epoch(leading)
		epochs = append(epochs, ep)
		if len(epochs) == 1 {
			_, err := lock.NewFair(env.Client, "again").ForceUnlock(ctx)
			require.NoError(t, err)
		} else {
			cancel()
		}
		<-leading.Done()
		return context.Cause(leading)
	})
	require.NoError(t, err)
	require.Len(t, epochs, 2)
	require.Greater(t, epochs[1], epochs[0])
}

// TestRunNeverCallsLeadWithoutLeading: a candidate that is never elected
// runs nothing and returns nil when its context ends.
func TestRunNeverCallsLeadWithoutLeading(t *testing.T) {
	_, client := redistest.Miniredis(t)
	ctx := ctxT(t)
	holder := election.New(client, "never")
	leading, err := holder.Campaign(ctx, "holder")
	require.NoError(t, err)
	defer func() { require.NoError(t, holder.Resign(leading)) }()
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	called := false
	require.NoError(t, election.New(client, "never").Run(short, "w", func(context.Context) error {
		called = true
		return nil
	}))
	require.False(t, called)
}

// TestOneLeaderAtATime: candidates on separate clients run short terms;
// the history of leaderships has no overlap and its epochs grow.
func TestOneLeaderAtATime(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		h := history.New()
		runCtx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		var wg sync.WaitGroup
		for i := range 4 {
			var c redis.UniversalClient = env.U()
			if env.Server != nil {
				c = env.Server.Client(t)
			}
			e := election.New(c, "history")
			wg.Add(1)
			go func() {
				defer wg.Done()
				err := e.Run(runCtx, strconv.Itoa(i), func(leading context.Context) error {
					ep, _ := election.Epoch(leading)
					rec := history.Hold{Lock: "history", Owner: strconv.Itoa(i) + "/" + strconv.FormatInt(ep, 10),
						Kind: history.Exclusive, Token: ep, HasToken: true, Acquired: time.Now()}
					time.Sleep(time.Duration(rand.IntN(3)) * time.Millisecond)
					rec.Released = time.Now()
					h.Add(rec)
					return nil
				})
				require.NoError(t, err)
			}()
		}
		wg.Wait()
		require.Greater(t, h.Len(), 4, "several terms ran")
		require.NoError(t, h.Err())
	})
}

// TestCheckReportsFailingRenewalsBeforeTheLoss: with the server stopped,
// the leader's Check fails while its leadership is still live.
func TestCheckReportsFailingRenewalsBeforeTheLoss(t *testing.T) {
	srv := redistest.StartServer(t)
	client := srv.Client(t, func(o *redis.Options) { o.ReadTimeout = 100 * time.Millisecond })
	ctx := ctxT(t)
	e := election.New(client, "health", election.WithWatchdogTimeout(900*time.Millisecond))
	require.NoError(t, e.Check(ctx), "a process that does not lead is healthy")
	leading, err := e.Campaign(ctx, "x")
	require.NoError(t, err)
	require.NoError(t, e.Check(ctx))
	srv.Pause(t)
	require.Eventually(t, func() bool { return e.Check(ctx) != nil }, 3*time.Second, 5*time.Millisecond)
	require.NoError(t, leading.Err(), "unhealthy before the leadership is lost")
	<-leading.Done()
	require.ErrorIs(t, context.Cause(leading), election.ErrLockLost)
	require.NoError(t, e.Check(ctx), "a process that no longer leads is a healthy follower")
	srv.Resume()
}

// TestRunEndsOnAClosedClient: a candidate whose client is closed can never
// be elected: Run returns the client's error at once, not campaigning
// again for ever.
func TestRunEndsOnAClosedClient(t *testing.T) {
	redistest.ForBackends(t, func(t *testing.T, env *redistest.Env) {
		c := env.NewClient(t)
		e := election.New(c, "closed-client")
		require.NoError(t, c.Close())
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		start := time.Now()
		err := e.Run(ctx, "v", func(context.Context) error { return nil })
		require.ErrorIs(t, err, redis.ErrClosed)
		require.Less(t, time.Since(start), 2*time.Second)
	})
}
