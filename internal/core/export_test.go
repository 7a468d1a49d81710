package core

import (
	"context"
	"time"

	"github.com/relock-go/relock/internal/conn"
)

// Hubs is how many clients have a hub now.
func Hubs() int { return hubs.Len() }

// Footprint is what h keeps per name: local queues, hand-off counters and
// subscribed channels.
func (h *Hub) Footprint() (queues, handOffs, channels int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.queues), len(h.handOffs), h.ps.Channels()
}

// Claim makes w a waiter that a release may hand the lock to, for owner,
// as JoinClaimant does.
func (w *Waiter) Claim(owner string, claim Claimant) {
	w.h.mu.Lock()
	defer w.h.mu.Unlock()
	w.owner, w.claim = owner, claim
}

// ClientOn is a Client with no Redis whose calls run on p.
func ClientOn(p *conn.Pool) Client { return Client{workers: p} }

// TryOnce makes one bounded try of send, as the loop makes each try of
// an attempt (run.try), on c's workers when ctx can end.
func TryOnce(ctx context.Context, c Client, patience time.Duration, send func(context.Context) (Result, error)) (Result, error) {
	r := run{sctx: ctx, req: Request{Attempt: TryFunc(send), Client: c, Patience: patience}}
	return r.try(ctx, false)
}

// TryFunc is a one-try function as an Attempt that marks and keeps nothing.
type TryFunc func(ctx context.Context) (Result, error)

// Send calls f; a try that acquired is Count 1.
func (f TryFunc) Send(ctx context.Context, _ bool) (Reply, error) {
	res, err := f(ctx)
	if res.Acquired {
		return Reply{Count: 1}, err
	}
	return Reply{TTL: res.TTL}, err
}

// Took reads Send's reply back.
func (TryFunc) Took(_ context.Context, r Reply, err error, _ bool) (Result, error) {
	return Result{Acquired: err == nil && r.Count > 0, TTL: r.TTL}, err
}

// Keep does nothing.
func (TryFunc) Keep(context.Context, bool) error { return nil }

// Abandon does nothing.
func (TryFunc) Abandon(context.Context, error) {}
