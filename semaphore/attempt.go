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

// answered is an error the acquire script answered with: the try ran,
// and took and marked nothing.
type answered struct{ error }

func (e answered) Unwrap() error { return e.error }

// Send makes one try of the acquisition (core.Attempt); the local head
// takes its turn in Redis. It writes landed, which the clean-up after a
// late try reads.
func (t *permitTry) Send(ctx context.Context, atHead bool) (core.Reply, error) {
	if ctx.Err() != nil || !t.s.readResizing(ctx) {
		t.landed = landing{} // its caller left before it could be sent
		return core.Reply{}, errUnsent
	}
	waiterID := ""
	if atHead {
		waiterID = t.claim.permitID
	}
	vals, acks, size, err := t.runScript(ctx, waiterID)
	t.landed = landing{vals, err, waiterID != ""}
	if err != nil {
		return core.Reply{}, err
	}
	if len(vals) != 2 {
		return core.Reply{}, answered{fmt.Errorf("unexpected reply %v", vals)}
	}
	switch vals[0] {
	case 1:
		return core.Reply{Count: 1, Acks: acks}, nil
	case 0:
		return core.Reply{TTL: time.Duration(vals[1]) * time.Millisecond}, nil
	case -2:
		return core.Reply{}, answered{t.s.mismatch(vals[1], size)}
	case -3: // resized below n during the wait
		return core.Reply{}, answered{fmt.Errorf("%w: n %d exceeds size %d", ErrInvalidArgument, t.claim.n, vals[1])}
	case -4:
		return core.Reply{}, answered{errs.WrongKind(vals[1])}
	}
	return core.Reply{}, answered{fmt.Errorf("unexpected reply %v", vals)}
}

// Took reads a try's reply (core.Attempt): what it may have left in
// Redis, and permits too few replicas acknowledged, given back.
func (t *permitTry) Took(ctx context.Context, r core.Reply, err error, atHead bool) (core.Result, error) {
	var ans answered
	if errors.As(err, &ans) {
		t.uncertain = false
		return core.Result{}, ans.error
	}
	t.uncertain = mayHaveRun(err)
	if late, _ := core.Lost(err); late != nil {
		t.late = late
	}
	switch {
	case err != nil:
		t.marked = t.marked || (atHead && mayHaveRun(err))
		return core.Result{}, err
	case r.Count == 0:
		t.marked = atHead
		return core.Result{TTL: r.TTL}, nil
	case !t.sync.Enough(r.Acks):
		err := t.sync.Refuse(r.Acks, func() error { return t.s.undo(ctx, t.claim.permitID) })
		t.uncertain = core.MayHaveRun(err)
		return core.Result{}, err
	}
	t.claim.sentAt = r.SentAt
	return core.Result{Acquired: true}, nil
}

// readResizing read-locks s.resizing, waiting no longer than ctx: a Resize
// holds it through its script, which a stalled server may hold up past a
// try's bound. false: ctx ended first (the lock is let go once had).
func (s *Semaphore) readResizing(ctx context.Context) bool {
	if s.resizing.TryRLock() {
		return true
	}
	got := make(chan struct{})
	go func() {
		s.resizing.RLock()
		close(got)
	}()
	select {
	case <-got:
		return true
	case <-ctx.Done():
	}
	go func() {
		<-got
		s.resizing.RUnlock()
	}()
	return false
}

// runScript runs the acquire script once, waiterID marking the head ("" for
// none): its reply, the WAIT's acks and the size the try was made with.
// It lets go of s.resizing, which its caller read-locked (readResizing).
func (t *permitTry) runScript(ctx context.Context, waiterID string) (vals []int64, acks scripts.Acks, size int64, err error) {
	s, leaseTime := t.s, t.claim.lease
	defer s.resizing.RUnlock()
	size = s.size.Load() // a Resize of this Semaphore during the wait counts
	cmd, acks := acquireLua{
		Semaphore: s.args.name, Permits: s.args.permits, Weights: s.args.weights, Waiters: s.args.waiters, Marks: s.args.marks, Channel: s.args.channel,
		Size: size, N: t.claim.n, PermitID: t.claim.permitID, LeaseMS: leaseTime.Milliseconds(), Waiter: waiterID,
		Publish: s.args.publish, MarkLifeMS: min(leaseTime, maxMarkLife).Milliseconds(), SizePolicy: s.sizePolicy(),
	}.call().Synced(ctx, s.client.Client, t.sync)
	vals, err = cmd.Int64Slice()
	return vals, acks, size, err
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
		Client:   s.client,
		Patience: t.cfg.UnlockTimeout,
		Watchdog: t.wd,
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
