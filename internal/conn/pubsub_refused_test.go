package conn_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/conn"
	"github.com/relock-go/relock/internal/testkit/redistest"
)

// A connection that breaks while the server runs a long script comes back
// at once, but the server refuses its resubscription (BUSY), as it
// would one made while it loads its data (LOADING). The channels must be
// subscribed again once the server answers, and their listeners told that
// a message may have been missed: otherwise they stay unsubscribed for
// good while the transport counts them as subscribed, and their waiters
// hear no unlock again.
func TestResubscriptionRefusedByABusyServerIsMadeAgain(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	srv := redistest.StartServer(t)
	d := &redistest.Breakable{}
	client := srv.Client(t, func(o *redis.Options) { o.Dialer = d.Dial })
	admin := srv.Client(t)
	busy := srv.Client(t, func(o *redis.Options) { o.ReadTimeout = 5 * time.Second })
	ps := conn.PubSubFor(conn.Of(client))
	ch := chanName(t, 0)
	rec := newRecorder()
	sub := subscribeReady(t, ctx, ps, ch, rec)

	require.NoError(t, admin.ConfigSet(ctx, "busy-reply-threshold", "50").Err())
	wait := redistest.BusyScript(busy, 1500*time.Millisecond)
	require.Eventually(t, func() bool {
		err := admin.Ping(ctx).Err()
		return err != nil && strings.HasPrefix(err.Error(), "BUSY")
	}, settle, poll, "the server turns busy")

	d.BreakAll()
	require.Equal(t, heard{"broken", ch, ""}, rec.next(t, "after the connection broke"))
	wait()

	redistest.RequireNumSubEventually(t, ctx, admin, 1, ch)
	rec.waitFor(t, "missed", ch, "after the resubscription")
	assert.False(t, sub.Failed(), "the subscription survives the refusal")
	n, err := admin.Publish(ctx, ch, "unlocked").Result()
	require.NoError(t, err)
	assert.Equal(t, int64(1), n)
	rec.requireMessage(t, ch, "unlocked", "a message after the server answered again")
}

// A resubscription refused for good (NOPERM: the user's channel rights
// were revoked, and Redis dropped its connection for it) fails the
// channel's subscription, so that the next waiter subscribes afresh and
// hears the refusal instead of waiting on a channel nobody subscribes.
func TestResubscriptionRefusedForGoodFailsTheSubscription(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	srv := redistest.StartServer(t)
	admin := srv.Client(t)
	require.NoError(t, admin.Do(ctx, "ACL", "SETUSER", "app", "on", ">pw", "~*", "&*", "+@all").Err())
	app := srv.Client(t, func(o *redis.Options) { o.Username, o.Password = "app", "pw" })
	ps := conn.PubSubFor(conn.Of(app))
	ch := chanName(t, 0)
	rec := newRecorder()
	sub := subscribeReady(t, ctx, ps, ch, rec)

	require.NoError(t, admin.Do(ctx, "ACL", "SETUSER", "app", "resetchannels", "&allowed:*").Err())
	require.Equal(t, heard{"broken", ch, ""}, rec.next(t, "after Redis dropped the connection"))
	require.Eventually(t, sub.Failed, settle, poll, "the refused resubscription fails the subscription")
	require.ErrorContains(t, sub.Err(), "NOPERM")
}

// Redis refuses a SUBSCRIBE whose channel the user may not access (NOPERM)
// with one error reply, in the place of that command's confirmation. Only
// that subscription fails: another channel's, sent after it on the same
// connection and answered after the refusal, is confirmed and hears its
// messages. (The refusal names no channel; the order of the replies says
// which command it answers.) It holds after a reconnect too, where
// go-redis subscribes every channel again on its own, and for a user who
// may not PING (the order is found again by an unsubscription).
func TestChannelRefusedFailsOnlyItsOwnSubscription(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	srv := redistest.StartServer(t)
	admin := srv.Client(t)
	require.NoError(t, admin.Do(ctx, "ACL", "SETUSER", "app", "on", ">pw", "~*", "resetchannels", "&allowed:*", "+@all", "-ping").Err())
	d := &redistest.Breakable{}
	app := srv.Client(t, func(o *redis.Options) { o.Username, o.Password, o.Dialer = "app", "pw", d.Dial })
	ps := conn.PubSubFor(conn.Of(app))
	rec := newRecorder()
	subscribeReady(t, ctx, ps, "allowed:warm", rec) // the connection is up

	for round := range 4 {
		if round == 2 {
			d.BreakAll()
			rec.waitFor(t, "missed", "allowed:warm", "the resubscription after the connection broke")
		}
		// A paused server checks the user's rights before it postpones a
		// command: it refuses the denied SUBSCRIBE at once (after the
		// reconnect, when the pause ends: the marker before it is
		// postponed) and confirms the other one when the pause ends. The
		// refusal reaches the client while the other subscription waits.
		require.NoError(t, admin.Do(ctx, "CLIENT", "PAUSE", "1000", "ALL").Err())
		deniedCh, allowedCh := fmt.Sprintf("denied:%d", round), fmt.Sprintf("allowed:%d", round)
		denied := subscribe(t, ctx, ps, deniedCh, rec)
		allowed := subscribe(t, ctx, ps, allowedCh, rec)
		requireNotReady(t, allowed, "while the server is paused")

		select {
		case <-denied.Ready():
		case <-time.After(heardTimeout):
			t.Fatalf("round %d: the refused subscription is not ready within %v", round, heardTimeout)
		}
		require.ErrorContains(t, denied.Err(), "NOPERM", "round %d", round)
		requireReady(t, allowed, fmt.Sprintf("round %d: the allowed channel, answered after the refusal", round))
		redistest.RequireNumSubEventually(t, ctx, admin, 1, allowedCh)
		require.NoError(t, admin.Publish(ctx, allowedCh, "unlocked").Err())
		rec.waitFor(t, "message", allowedCh, fmt.Sprintf("round %d: a message on the allowed channel", round))
		denied.Cancel()
	}
}

// A server busy with a long script checks the user's rights before it
// answers BUSY: a denied SUBSCRIBE is refused (NOPERM) at once, an
// allowed one BUSY, and sent again (after a marker) until the server
// answers. Only the denied one fails, whether it was sent before the
// allowed one or after it (when the allowed one waits to be sent again:
// a refusal then may answer any send before it); the allowed one is
// confirmed once the server answers.
func TestChannelRefusedWhileTheServerIsBusy(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	srv := redistest.StartServer(t, redistest.WithArgs("--busy-reply-threshold", "50"))
	admin := srv.Client(t)
	require.NoError(t, admin.Do(ctx, "ACL", "SETUSER", "app", "on", ">pw", "~*", "resetchannels", "&allowed:*", "+@all").Err())
	app := srv.Client(t, func(o *redis.Options) { o.Username, o.Password = "app", "pw" })
	ps := conn.PubSubFor(conn.Of(app))
	rec := newRecorder()
	subscribeReady(t, ctx, ps, "allowed:warm", rec)

	busy := srv.Client(t, func(o *redis.Options) { o.ReadTimeout = 5 * time.Second })
	wait := redistest.BusyScript(busy, 2*time.Second)
	redistest.RequireBusy(t, ctx, admin)
	denied0 := subscribe(t, ctx, ps, "denied:0", rec)
	allowed0 := subscribe(t, ctx, ps, "allowed:0", rec)
	allowed1 := subscribe(t, ctx, ps, "allowed:1", rec)
	denied1 := subscribe(t, ctx, ps, "denied:1", rec)
	requireRefused := func(sub *conn.Subscription, what string) {
		t.Helper()
		select {
		case <-sub.Ready():
		case <-time.After(heardTimeout):
			t.Fatalf("%s: not ready within %v", what, heardTimeout)
		}
		require.ErrorContains(t, sub.Err(), "NOPERM", what)
	}
	requireRefused(denied0, "the denied channel sent first")
	requireNotReady(t, allowed0, "while the server is busy")
	requireNotReady(t, allowed1, "while the server is busy")
	wait()
	// Sent after a BUSY, the second denied channel waits with the others
	// to be sent again; its refusal comes once the server answers.
	requireRefused(denied1, "the denied channel sent after a BUSY")
	for _, a := range []struct {
		ch  string
		sub *conn.Subscription
	}{{"allowed:0", allowed0}, {"allowed:1", allowed1}} {
		requireReady(t, a.sub, a.ch+", once the server answers")
		redistest.RequireNumSubEventually(t, ctx, admin, 1, a.ch)
		require.NoError(t, admin.Publish(ctx, a.ch, "unlocked").Err())
		rec.waitFor(t, "message", a.ch, "a message on "+a.ch)
	}
}
