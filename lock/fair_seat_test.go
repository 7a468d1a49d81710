package lock_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/testkit/history"
	"github.com/relock-go/relock/internal/testkit/redistest"
	"github.com/relock-go/relock/lock"
)

// A fair lock's waiter waits on a seat of its process, whose channel stays
// subscribed from one waiter to the next: under steady contention the
// waits cost no SUBSCRIBE or UNSUBSCRIBE of their own, and the holds still
// never overlap.
func TestFairWaitsShareSubscriptions(t *testing.T) {
	srv := redistest.StartServer(t)
	ctx := ctxT(t)
	admin := srv.Client(t)
	counts := func() map[string]int {
		n, err := redistest.CommandCounts(ctx, admin)
		require.NoError(t, err)
		return n
	}
	before := counts()
	hist := history.New()
	var wg sync.WaitGroup
	const clients, perClient, rounds = 2, 4, 30
	for range clients {
		client := srv.Client(t)
		for range perClient {
			wg.Go(func() {
				fair := lock.NewFair(client, "fair")
				for range rounds {
					h, err := fair.Lock(ctx)
					if !assertNoError(t, err) {
						return
					}
					got := time.Now()
					tok, _ := lock.FencingToken(h)
					time.Sleep(200 * time.Microsecond)
					released := time.Now()
					if !assertNoError(t, fair.Unlock(h)) {
						return
					}
					hist.Add(history.Hold{Lock: "fair", Kind: history.Exclusive, Token: tok, HasToken: true, Acquired: got, Released: released})
				}
			})
		}
	}
	wg.Wait()
	require.NoError(t, hist.Err())
	require.Equal(t, clients*perClient*rounds, hist.Len())
	after := counts()
	waits := after["rpush"] - before["rpush"]
	subs := after["subscribe"] - before["subscribe"]
	unsubs := after["unsubscribe"] - before["unsubscribe"]
	t.Logf("%d holds, %d waits in the list, %d SUBSCRIBEs, %d UNSUBSCRIBEs", hist.Len(), waits, subs, unsubs)
	require.Greater(t, waits, clients*perClient*rounds/2, "the lock was contended")
	// One seat per goroutine at most, subscribed once each; again only if
	// a seat lay free for the hub's linger (100 ms), which steady
	// contention avoids but a long pause of a loaded machine may not: the
	// bound allows each seat one such drop, against one per wait before.
	require.LessOrEqual(t, subs, 2*clients*perClient, "waits subscribed on their own")
	require.LessOrEqual(t, unsubs, 2*clients*perClient)
}
