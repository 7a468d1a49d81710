package semaphore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/relock-go/relock/internal/core"
	"github.com/relock-go/relock/internal/errs"
	"github.com/relock-go/relock/internal/lease"
	"github.com/relock-go/relock/internal/scripts"
	"github.com/relock-go/relock/tracing"
)

// permitTry is one acquisition's state: what its tries send, and what an
// acquisition that gives up must clean up after them.
type permitTry struct {
	s     *Semaphore
	cfg   *core.Config // New's, or this acquisition's own (opts)
	owner string
	sync  scripts.ReplicaPolicy
	wd    *lease.Watchdog // the claim's sentAt is on its clock
	// claim is this acquisition's side of a hand-off (handoff.go).
	claim waiter

	marked    bool            // Redis may hold this waiter's mark
	uncertain bool            // the last try failed after its script may have run
	late      <-chan struct{} // a try still in flight when the caller left
	// landed is the last try's answer, written by the try itself: a late
	// try's, read once late is closed, tells what it left.
	landed landing
	held   context.Context // the hold's, once kept
}

// errUnsent is a try not sent, its caller's wait having ended.
var errUnsent = errors.New("try not sent: the wait had ended")

// mayHaveRun is core.MayHaveRun, but false for a try never sent.
func mayHaveRun(err error) bool { return core.MayHaveRun(err) && !errors.Is(err, errUnsent) }

// landing is one try's answer, as the try itself saw it.
type landing struct {
	vals   []int64
	err    error
	marked bool // the try marked its waiter (it ran at the head)
}

// Keep makes the acquired hold (core.Attempt).
func (t *permitTry) Keep(ctx context.Context, traced bool) error {
	var err error
	t.held, err = t.s.newHold(ctx, t, traced)
	return err
}

// tryReply is what one try read of the acquire script's reply.
type tryReply struct {
	vals []int64
	acks scripts.Acks
	size int64 // the size the try was made with
}

// Try makes one try of the acquisition (core.Attempt).
func (t *permitTry) Try(ctx context.Context, atHead bool) (core.Result, error) {
	s, permitID, n := t.s, t.claim.permitID, t.claim.n
	if ctx.Err() != nil {
		// The caller gave up before this try left (promoted as its wait
		// ended): sent now, it would take permits or mark for nobody.
		return core.Result{}, context.Cause(ctx)
	}
	waiterID := ""
	if atHead {
		waiterID = permitID // the local head takes its turn in Redis
	}
	t.claim.sentAt = t.wd.Now()
	r, err := core.Bounded(ctx, s.client, t.cfg.UnlockTimeout, core.CallFunc[tryReply](func(ctx context.Context) (tryReply, error) {
		if ctx.Err() != nil {
			t.landed = landing{} // its caller left before a worker took it up
			return tryReply{}, errUnsent
		}
		r, err := t.runScript(ctx, waiterID)
		t.landed = landing{r.vals, err, waiterID != ""}
		return r, err
	}))
	vals, acks, size := r.vals, r.acks, r.size
	t.uncertain = mayHaveRun(err)
	if late, _ := core.Lost(err); late != nil {
		t.late = late
	}
	if err != nil {
		t.marked = t.marked || (waiterID != "" && mayHaveRun(err))
		return core.Result{}, err
	}
	if len(vals) != 2 {
		return core.Result{}, fmt.Errorf("unexpected reply %v", vals)
	}
	switch vals[0] {
	case 1:
		if !t.sync.Enough(acks) {
			err := t.sync.Refuse(acks, func() error { return s.undo(ctx, permitID) })
			t.uncertain = core.MayHaveRun(err)
			return core.Result{}, err
		}
		return core.Result{Acquired: true}, nil
	case 0:
		t.marked = waiterID != ""
		return core.Result{TTL: time.Duration(vals[1]) * time.Millisecond}, nil
	case -2:
		return core.Result{}, s.mismatch(vals[1], size)
	case -3: // resized below n during the wait
		return core.Result{}, fmt.Errorf("%w: n %d exceeds size %d", ErrInvalidArgument, n, vals[1])
	case -4:
		return core.Result{}, errs.WrongKind(vals[1])
	}
	return core.Result{}, fmt.Errorf("unexpected reply %v", vals)
}

// runScript runs the acquire script once, waiterID marking the head ("" for none).
func (t *permitTry) runScript(ctx context.Context, waiterID string) (tryReply, error) {
	s, leaseTime := t.s, t.claim.lease
	s.resizing.RLock()
	defer s.resizing.RUnlock()
	size := s.size.Load() // a Resize of this Semaphore during the wait counts
	cmd, acks := acquireLua{
		Semaphore: s.args.name, Permits: s.args.permits, Weights: s.args.weights, Waiters: s.args.waiters, Marks: s.args.marks, Channel: s.args.channel,
		Size: size, N: t.claim.n, PermitID: t.claim.permitID, LeaseMS: leaseTime.Milliseconds(), Waiter: waiterID,
		Publish: s.args.publish, MarkLifeMS: min(leaseTime, maxMarkLife).Milliseconds(), SizePolicy: s.sizePolicy(),
	}.call().Synced(ctx, s.client.Client, t.sync)
	vals, err := cmd.Int64Slice()
	return tryReply{vals, acks, size}, err
}

// request is the attempt's core.Request and trace: a TryAcquire when once.
func (t *permitTry) request(size int64, once bool) (core.Trace, core.Request) {
	s, leaseTime := t.s, t.claim.lease
	tr := core.Trace{
		Tracer:  s.inst.Tracer,
		Name:    tracing.SpanAcquireSemaphore,
		Start:   s.inst.SpanStart,
		Lease:   leaseTime,
		Attrs:   []attribute.KeyValue{tracing.Size.Int64(size), tracing.Permits.Int64(t.claim.n)},
		Metrics: s.inst.Metrics,
	}
	req := core.Request{
		Hub:     s.hub,
		Channel: s.channel,
		Admits:  core.Several,
		Wait:    t.cfg.WaitTimeout,
		// A waiter promoted behind a holder tries within a third of its
		// mark's life, keeping a mark a release wrote for it fresh.
		Fallback: min(leaseTime, maxMarkLife/3),
		Owner:    t.owner,
		Attempt:  t,
	}
	if once {
		req.Entry = core.SingleTry
	} else {
		req.HandOff = &t.claim
	}
	return tr, req
}

// Abandon (core.Attempt) withdraws the waiter's mark a given-up acquisition
// may have left and gives back permits a lost-reply try may have taken.
func (t *permitTry) Abandon(ctx context.Context, _ error) {
	if t.late != nil {
		go t.afterLate(ctx)
		return
	}
	if t.marked {
		t.s.withdrawMark(ctx, t.claim.permitID)
	}
	if t.uncertain {
		t.s.giveBack(ctx, t.claim.permitID, 0)
	}
}

// afterLate cleans up after a late try once it lands, by what it
// answered: most need nothing, and a churn of waiters giving up must not
// queue a give-back each before the next caller's try.
func (t *permitTry) afterLate(ctx context.Context) {
	<-t.late
	l := t.landed
	answered := l.err == nil && len(l.vals) == 2
	took := answered && l.vals[0] == 1
	unknown := core.MayHaveRun(l.err)
	// an earlier try's mark (a grant takes it back), or this try's own
	if t.marked && !took || l.marked && (unknown || answered && l.vals[0] == 0) {
		t.s.withdrawMark(ctx, t.claim.permitID)
	}
	if took || unknown {
		t.s.giveBack(ctx, t.claim.permitID, t.claim.lease)
	}
}
