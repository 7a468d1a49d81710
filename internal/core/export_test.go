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
	r := run{req: Request{Attempt: TryFunc(send), Client: c, Patience: patience}}
	return r.try(ctx, false)
}
