package election_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/election"
	"github.com/relock-go/relock/internal/testkit/redistest"
	"github.com/relock-go/relock/lock"
)

// collect gathers an observer's reports until it has n or ctx ends.
func collect(ch <-chan election.Leader, n int, within time.Duration) []election.Leader {
	var got []election.Leader
	deadline := time.After(within)
	for len(got) < n {
		select {
		case l, ok := <-ch:
			if !ok {
				return got
			}
			got = append(got, l)
		case <-deadline:
			return got
		}
	}
	return got
}

// TestObserversSeeEveryChangeInOrder: cycles of elect, proclaim and
// resign, each reported once and in order to every observer, vacancy
// included, with no change missed.
func TestObserversSeeEveryChangeInOrder(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		cycles := 100
		if env.Name() == "redis" {
			cycles = 1000
		}
		ctx := ctxT(t)
		const observers = 10
		e := election.New(env.U(), "watched")
		obsCtx, stop := context.WithCancel(ctx)
		defer stop()
		chans := make([]<-chan election.Leader, observers)
		for i := range chans {
			chans[i] = election.New(env.U(), "watched").Observe(obsCtx)
			require.True(t, (<-chans[i]).Vacant(), "the current state first")
		}
		var want []election.Leader
		for i := range cycles {
			leading, err := e.Campaign(ctx, fmt.Sprintf("c%d", i))
			require.NoError(t, err)
			l, err := e.Leader(ctx)
			require.NoError(t, err)
			want = append(want, l)
			if i%2 == 0 {
				require.NoError(t, e.Proclaim(leading, fmt.Sprintf("c%d+", i)))
				l.Value += "+"
				want = append(want, l)
			}
			require.NoError(t, e.Resign(leading))
			want = append(want, election.Leader{})
		}
		for i, ch := range chans {
			got := collect(ch, len(want), 20*time.Second)
			require.Equal(t, len(want), len(got), "observer %d: every change, once", i)
			for j := range want {
				require.Equal(t, want[j].Epoch, got[j].Epoch, "observer %d, change %d", i, j)
				require.Equal(t, want[j].Value, got[j].Value, "observer %d, change %d", i, j)
				require.True(t, want[j].Since.Equal(got[j].Since), "observer %d, change %d", i, j)
			}
		}
		stop()
		for _, ch := range chans {
			for range ch { // closed when ctx ends
			}
		}
	})
}

// TestObserverSeesALapsedLeadershipEnd: a leader that stops renewing
// (a fixed lease here; a crash alike) publishes nothing, and observers
// still report the vacancy once the lease lapsed on the server, never
// before.
func TestObserverSeesALapsedLeadershipEnd(t *testing.T) {
	for _, b := range redistest.AllBackends()[1:] { // real servers: their TTLs run on their own
		t.Run(b.Name, func(t *testing.T) {
			env := b.New(t)
			ctx := ctxT(t)
			const lease = 400 * time.Millisecond
			e := election.New(env.U(), "lapse", election.WithLeaseTime(lease))
			changes := election.New(env.U(), "lapse").Observe(ctx)
			require.True(t, (<-changes).Vacant())
			leading, err := e.Campaign(ctx, "brief")
			require.NoError(t, err)
			elected := time.Now()
			ep, _ := election.Epoch(leading)
			require.Equal(t, ep, (<-changes).Epoch)
			select {
			case l := <-changes:
				seen := time.Since(elected)
				t.Logf("vacancy seen %v after the election (lease %v)", seen, lease)
				require.True(t, l.Vacant())
				require.GreaterOrEqual(t, seen, lease-20*time.Millisecond, "not before the lease lapsed")
			case <-time.After(lease + 5*time.Second):
				t.Fatal("the lapsed leadership was never reported ended")
			}
			<-leading.Done()
			require.ErrorIs(t, context.Cause(leading), election.ErrLockLost)
		})
	}
}

// TestObserverHealsAMissedChange: a hold taken away without a message
// (ForceUnlock of the fair lock) is found by the observer's next read.
func TestObserverHealsAMissedChange(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		e := election.New(env.U(), "heal", election.WithWatchdogTimeout(300*time.Millisecond))
		changes := e.Observe(ctx)
		require.True(t, (<-changes).Vacant())
		_, err := e.Campaign(ctx, "x")
		require.NoError(t, err)
		require.Equal(t, "x", (<-changes).Value)
		_, err = lock.NewFair(env.U(), "heal").ForceUnlock(ctx)
		require.NoError(t, err)
		got := collect(changes, 1, 5*time.Second)
		require.Len(t, got, 1)
		require.True(t, got[0].Vacant())
	})
}

// TestObserveEndsWithItsContext: the channel closes, and an Election New
// refused gives a closed channel at once.
func TestObserveEndsWithItsContext(t *testing.T) {
	_, client := redistest.Miniredis(t)
	ctx, cancel := context.WithCancel(context.Background())
	ch := election.New(client, "end").Observe(ctx)
	<-ch
	cancel()
	for range ch {
	}
	_, open := <-election.New(client, "").Observe(context.Background())
	require.False(t, open)
}
