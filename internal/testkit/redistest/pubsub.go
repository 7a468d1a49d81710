package redistest

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// The helpers below serve the tests of every package that runs pub/sub
// against a server (conn, queue) or behaviour suites on both backends
// (acquire, scripts), which each kept a copy of them before. They check
// what the copies checked, with the same timeouts, but fail through
// t.Fatalf rather than testify's require: this package is also linked into
// programs (the soak tool, the benchmark harness) whose modules do not
// carry testify.

const (
	// settleTimeout bounds the waits for server-side state (NUMSUB, CLIENT
	// LIST) to settle, e.g. for a connection to close once its last
	// subscription lingered out: generous, since the machine may be slow
	// and -race slows it further.
	settleTimeout = 15 * time.Second
	// settlePoll is how often those waits look again: often enough that a
	// test ends soon after the state is reached, rarely enough not to load
	// the server.
	settlePoll = 10 * time.Millisecond
)

// ForBackends runs fn as a parallel subtest on each of [Backends]
// (miniredis and a real redis-server), on a fresh Env of its own.
func ForBackends(t *testing.T, fn func(t *testing.T, env *Env)) {
	t.Helper()
	for _, b := range Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			env := b.New(t)
			if env == nil { // only with a testing.TB whose Fatalf returns
				t.Fatalf("redistest: backend %s gave no Env", b.Name)
			}
			fn(t, env)
		})
	}
}

// NumSub returns PUBSUB NUMSUB of channels on c's server, failing t on an
// error.
func NumSub(t testing.TB, ctx context.Context, c *redis.Client, channels ...string) map[string]int64 {
	t.Helper()
	n, err := c.PubSubNumSub(ctx, channels...).Result()
	if err != nil {
		t.Fatalf("redistest: PUBSUB NUMSUB: %v", err)
	}
	return n
}

// RequireNumSubEventually waits up to 15 s until every one of channels has
// want subscribers on c's server, failing t if that never happens. The
// server takes a subscribe or unsubscribe a little after the client sent
// it, so a test can not check NUMSUB just once.
func RequireNumSubEventually(t testing.TB, ctx context.Context, c *redis.Client, want int64, channels ...string) {
	t.Helper()
	eventually(t, func() bool {
		n, err := c.PubSubNumSub(ctx, channels...).Result()
		if err != nil {
			return false
		}
		for _, ch := range channels {
			if n[ch] != want {
				return false
			}
		}
		return true
	}, "PUBSUB NUMSUB of %d channel(s) never became %d", len(channels), want)
}

// RequirePubSubConnsEventually waits up to 15 s until c's server has want
// connections in pub/sub mode ([CountPubSubConns]), failing t if that
// never happens. It is how a test sees that waiters share one
// connection, or that the last one closed it.
func RequirePubSubConnsEventually(t testing.TB, ctx context.Context, c *redis.Client, want int) {
	t.Helper()
	eventually(t, func() bool {
		n, err := CountPubSubConns(ctx, c)
		return err == nil && n == want
	}, "pub/sub connections never became %d", want)
}

// PubSubConn returns the one connection of c's server in pub/sub mode,
// failing t unless there is exactly one. A test takes its ID to see it
// closed later ([RequireConnClosedEventually]) or a new one opened.
func PubSubConn(t testing.TB, ctx context.Context, c *redis.Client) ClientInfo {
	t.Helper()
	infos, err := ClientList(ctx, c)
	if err != nil {
		t.Fatalf("%v", err)
		return ClientInfo{}
	}
	var found []ClientInfo
	for _, ci := range infos {
		if ci.IsPubSub() {
			found = append(found, ci)
		}
	}
	if len(found) != 1 {
		t.Fatalf("redistest: %d pub/sub connections, want 1: %+v", len(found), found)
		return ClientInfo{}
	}
	return found[0]
}

// RequireConnClosedEventually waits up to 15 s until the connection id is
// gone from c's CLIENT LIST, failing t if it stays. The
// server notices a client's close a little after the client made it.
func RequireConnClosedEventually(t testing.TB, ctx context.Context, c *redis.Client, id int64) {
	t.Helper()
	eventually(t, func() bool {
		infos, err := ClientList(ctx, c)
		if err != nil {
			return false
		}
		for _, ci := range infos {
			if ci.ID == id {
				return false
			}
		}
		return true
	}, "connection id=%d was never closed", id)
}

// eventually calls cond every settlePoll until it returns true, failing t
// with the message format, args once settleTimeout has passed without it.
// It is require.Eventually with the timeouts every caller here shares.
func eventually(t testing.TB, cond func() bool, format string, args ...any) {
	t.Helper()
	deadline := time.Now().Add(settleTimeout)
	tick := time.NewTicker(settlePoll)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("redistest: "+format+" within %v", append(args, settleTimeout)...)
			return
		}
		<-tick.C
	}
}
