package conn_test

import (
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
