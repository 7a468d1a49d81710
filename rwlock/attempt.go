package rwlock

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/relock-go/relock/internal/core"
	"github.com/relock-go/relock/internal/lease"
	"github.com/relock-go/relock/internal/scripts"
	"github.com/relock-go/relock/tracing"
)

// attempt is one acquisition's state: what its tries send, what they
// got, and what an acquisition that gives up must clean up after them.
type attempt struct {
	rw    *RWMutex
	cfg   *core.Config // New's, or this acquisition's own (opts)
	side  access
	owner string
	lease time.Duration
	wd    *lease.Watchdog // sentAt is on its clock

	// mode makes a rerun of the script return the first run's grant: a
	// minted owner finds its field, a shared one uses the acquire latch.
	mode  any
	latch string

	// marked: Redis may hold this writer's waiting mark.
	marked bool
	// uncertain: the last try failed after its script may have run.
	uncertain bool
	late      <-chan struct{} // a try still in flight when the caller left

	// claim is a reader's side of a hand-off (nil: none).
	claim *readClaim

	count, token int64
	sentAt       time.Time
	held         context.Context // the hold's, once kept
}

// Keep makes the acquired hold (core.Attempt), from a handed-over read lock if any.
func (a *attempt) Keep(ctx context.Context, traced bool) error {
	if a.claim != nil && a.claim.given {
		a.count, a.token, a.sentAt = 1, a.claim.token, a.claim.sentAt
	}
	fresh := a.mode == scripts.ModeMinted
	var err error
	a.held, err = a.rw.newHold(ctx, a.cfg, a.side, a.owner, fresh, a.count, a.token, a.sentAt, a.lease, traced)
	return err
}

// Send makes one try of the acquisition (core.Attempt): only a writer at
// the head of the local queue marks itself waiting.
func (a *attempt) Send(ctx context.Context, atHead bool) (core.Reply, error) {
	c, tok, ttl, err := a.rw.runAcquire(ctx, a.cfg.ReplicaPolicy(), a.side, a.owner, a.lease, a.member(atHead), a.mode, a.latch)
	return core.Reply{Count: c, Token: tok, TTL: ttl}, err
}

// member is the writer's mark a try atHead sends ("" for none).
func (a *attempt) member(atHead bool) string {
	if a.side == write && atHead {
		return a.owner
	}
	return ""
}

// Took reads a try's reply (core.Attempt).
func (a *attempt) Took(ctx context.Context, r core.Reply, err error, atHead bool) (core.Result, error) {
	a.sentAt = r.SentAt
	member := a.member(atHead)
	c, tok, ttl := r.Count, r.Token, r.TTL
	late, uncertain := core.Lost(err)
	a.uncertain = uncertain
	if late != nil {
		a.late = late
	}
	if err != nil || c == 0 {
		a.marked = a.marked || member != ""
		return core.Result{TTL: ttl}, err
	}
	a.count, a.token = c, tok
	trace.SpanFromContext(ctx).SetAttributes(
		tracing.Reentrant.Bool(a.count > 1),
		tracing.FencingToken.Int64(a.token),
	)
	return core.Result{Acquired: true}, nil
}

// request is the core.Request that makes the attempt, and its trace:
// a TryLock or TryRLock when once; direct skips the local queue.
func (a *attempt) request(once, direct bool) (core.Trace, core.Request) {
	rw, s := a.rw, a.side
	tr := core.Trace{Tracer: rw.inst[read].Tracer, Name: tracing.SpanAcquireReadLock, Start: rw.inst[s].SpanStart, Lease: a.lease, Metrics: rw.inst[s].Metrics}
	req := core.Request{Hub: rw.hub, Channel: rw.channel, Wait: a.cfg.WaitTimeout, Fallback: a.lease, Owner: a.owner, Attempt: a,
		Client: rw.client, Patience: a.cfg.UnlockTimeout, Watchdog: a.wd}
	if s == write {
		tr.Name = tracing.SpanAcquireWriteLock
	} else {
		req.Admits = core.Readers
	}
	switch {
	case once:
		req.Entry = core.SingleTry
	case direct:
		req.Entry = core.Reenter
	}
	if a.claim != nil {
		req.HandOff = a.claim
	}
	return tr, req
}

// Abandon (core.Attempt) withdraws a writer's waiting mark and gives back
// what a lost-reply try, or a release offering this reader the lock, took.
func (a *attempt) Abandon(ctx context.Context, _ error) {
	if a.marked {
		a.rw.withdrawMark(ctx, a.owner, a.late)
	}
	if a.uncertain || (a.claim != nil && a.claim.mayHold) {
		a.rw.giveBack(ctx, a.side, a.owner, a.latch, a.late, a.lease)
	}
}
