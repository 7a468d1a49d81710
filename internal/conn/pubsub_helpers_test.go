package conn_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/conn"
	"github.com/relock-go/relock/internal/testkit/redistest"
)

const (
	// heardTimeout bounds every wait for a listener to hear something:
	// generous, since the machine may be slow and -race slows it further.
	heardTimeout = 10 * time.Second
	// settle bounds the waits for server-side state (NUMSUB, CLIENT LIST)
	// and for the linger to pass.
	settle = 15 * time.Second
	poll   = 10 * time.Millisecond
)

func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// chanName is a channel named as the lock package names them.
func chanName(t *testing.T, i int) string {
	return fmt.Sprintf("redisson_lock__channel:{%s:%d}", t.Name(), i)
}

// heard is one call a recorder received.
type heard struct {
	kind    string // "message", "missed" or "broken"
	channel string
	payload string
}

// recorder is a conn.Listener that records, in order, what it hears.
type recorder struct{ events chan heard }

func newRecorder() *recorder { return &recorder{events: make(chan heard, 4096)} }

func (r *recorder) Message(channel, payload string) { r.put(heard{"message", channel, payload}) }
func (r *recorder) Missed(channel string)           { r.put(heard{"missed", channel, ""}) }
func (r *recorder) Broken(channel string)           { r.put(heard{"broken", channel, ""}) }

// put never blocks: a listener must not. The buffer is far larger than
// any test needs; a full one panics rather than drop what the test checks.
func (r *recorder) put(h heard) {
	select {
	case r.events <- h:
	default:
		panic("recorder: buffer full")
	}
}

// next returns the next event, failing the test when none comes in time.
func (r *recorder) next(t *testing.T, what string) heard {
	t.Helper()
	select {
	case h := <-r.events:
		return h
	case <-time.After(heardTimeout):
		t.Fatalf("%s: nothing heard within %v", what, heardTimeout)
		return heard{}
	}
}

// requireMessage requires the next event to be payload on channel.
func (r *recorder) requireMessage(t *testing.T, channel, payload, what string) {
	t.Helper()
	require.Equal(t, heard{"message", channel, payload}, r.next(t, what), what)
}

// waitFor skips events until one of kind on channel, failing the test if
// none comes in time.
func (r *recorder) waitFor(t *testing.T, kind, channel, what string) {
	t.Helper()
	deadline := time.After(heardTimeout)
	for {
		select {
		case h := <-r.events:
			if h.kind == kind && h.channel == channel {
				return
			}
		case <-deadline:
			t.Fatalf("%s: no %s of %s within %v", what, kind, channel, heardTimeout)
		}
	}
}

// requireQuiet checks without blocking that r has heard nothing more. It
// is used after an event that would have been heard before the one the
// test waited for, so it is exact, not a timing guess.
func (r *recorder) requireQuiet(t *testing.T, what string) {
	t.Helper()
	select {
	case h := <-r.events:
		t.Fatalf("%s: heard %+v, want nothing", what, h)
	default:
	}
}

// subscribe subscribes channel for l and cancels it at the end of the
// test, so the connection closes and no goroutine outlives the test. It
// does not wait for Redis to confirm the subscription.
func subscribe(t *testing.T, ctx context.Context, ps *conn.PubSub, channel string, l conn.Listener) *conn.Subscription {
	t.Helper()
	sub, err := ps.Subscribe(ctx, channel, l)
	require.NoError(t, err)
	require.NotNil(t, sub)
	t.Cleanup(sub.Cancel)
	return sub
}

// requireReady waits until Redis confirmed sub, failing on a refusal.
func requireReady(t *testing.T, sub *conn.Subscription, what string) {
	t.Helper()
	select {
	case <-sub.Ready():
	case <-time.After(heardTimeout):
		t.Fatalf("%s: subscription not confirmed within %v", what, heardTimeout)
	}
	require.NoError(t, sub.Err(), what)
	require.False(t, sub.Failed(), what)
}

// subscribeReady is subscribe, then requireReady.
func subscribeReady(t *testing.T, ctx context.Context, ps *conn.PubSub, channel string, l conn.Listener) *conn.Subscription {
	t.Helper()
	sub := subscribe(t, ctx, ps, channel, l)
	requireReady(t, sub, channel)
	return sub
}

// requireNotReady checks without blocking that sub is not confirmed yet.
func requireNotReady(t *testing.T, sub *conn.Subscription, what string) {
	t.Helper()
	select {
	case <-sub.Ready():
		t.Fatalf("%s: Ready closed, want open", what)
	default:
	}
}

func pubSubConns(t *testing.T, ctx context.Context, c *redis.Client) int {
	t.Helper()
	n, err := redistest.CountPubSubConns(ctx, c)
	require.NoError(t, err)
	return n
}
