package redlock

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/relock-go/relock/internal/core"
)

// round is one attempt on every member under one owner id, and what it
// won. A fresh acquisition mints an id per round, so whatever of a round
// reaches a member late touches only that round's field, never a later hold.
type round struct {
	id      string // the members' owner field
	reentry bool
	won     []bool // by member
	// ended: released, or given back after a loss; nothing more to do.
	ended atomic.Bool
}

// background counts what a Lock left running, for Drain.
type background struct {
	mu   sync.Mutex
	n    int
	idle chan struct{} // closed when n drops to 0
}

// add counts n more running (n < 0: fewer).
func (b *background) add(n int) {
	b.mu.Lock()
	if b.n == 0 {
		b.idle = make(chan struct{})
	}
	if b.n += n; b.n == 0 {
		close(b.idle)
	}
	b.mu.Unlock()
}

func (b *background) done() { b.add(-1) }

func (b *background) wait(ctx context.Context) error {
	b.mu.Lock()
	n, idle := b.n, b.idle
	b.mu.Unlock()
	if n == 0 {
		return nil
	}
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// Drain waits until ctx ends or what this Lock left in the background has
// ended: attempts left behind by a decided round, give-backs, and releases
// Unlock did not wait for. Each is bounded by the node or unlock timeout;
// call Drain before a program or a test ends.
func (l *Lock) Drain(ctx context.Context) error {
	if err := l.ident().Check("drain", ctx, unmade); err != nil {
		return err
	}
	return l.id.Wrap("drain", l.bg.wait(ctx))
}

// each runs f on the worker of every member which marks (nil: every member).
func (l *Lock) each(which []bool, f func(i int, n core.Member)) {
	for i, n := range l.nodes {
		if which == nil || which[i] {
			n.Client.Go(func() { f(i, n) })
		}
	}
}

// marked counts the members which marks.
func marked(which []bool) (n int) {
	for _, w := range which {
		if w {
			n++
		}
	}
	return n
}

// graceSlack is added to the grace after a decision: scheduling noise.
const graceSlack = 10 * time.Millisecond

// tryAll makes round r's attempts and returns once the outcome is decided
// and the others answered or are past their grace (late answers join).
func (l *Lock) tryAll(ctx context.Context, r *round, lease time.Duration) []outcome {
	// Not cancelled on decision: an attempt left behind must learn whether to give back.
	nctx, stop := context.WithTimeout(ctx, l.nodeTimeout(lease))
	n := len(l.nodes)
	claimed, results := make([]atomic.Bool, n), make(chan answer, n)
	t := &tally{nodes: l.nodes, nctx: nctx, outs: make([]outcome, n), claimed: claimed, results: results}
	var running atomic.Int32
	running.Store(int32(n))
	l.bg.add(1)
	giveBackCtx := core.Detached(ctx)
	// An attempt the round no longer counts gives back what it may have taken.
	l.each(nil, func(i int, node core.Member) {
		ok, token, _, err := node.Try(nctx, r.id, lease)
		if claimed[i].CompareAndSwap(false, true) {
			results <- answer{i: i, ok: ok, token: token, err: err}
		} else if ok || (!r.reentry && core.MayHaveRun(err)) {
			_, _ = node.Release(giveBackCtx, r.id, l.cfg.UnlockTimeout)
		}
		if running.Add(-1) == 0 {
			stop()
			l.bg.done()
		}
	})
	t.collect(l.quorum)
	t.leaveBehind()
	return t.outs
}

// answer is one member's reply to a round's attempt.
type answer struct {
	i     int
	ok    bool
	token int64
	err   error
}

// tally is what tryAll knows of a round's members: outcomes and answers to come.
type tally struct {
	nodes []core.Member
	nctx  context.Context // the attempts', bounded by the node timeout
	outs  []outcome
	// claimed[i]: an attempt's result counts only if it claims before the decision.
	claimed     []atomic.Bool
	results     chan answer
	won, failed int
}

// record counts a member's answer; pending: the round was decided before it.
func (t *tally) record(res answer, pending bool) {
	ne := &NodeError{Index: res.i, Node: t.nodes[res.i].Addr + " " + t.nodes[res.i].Name, Outcome: OutcomeError, Err: res.err}
	switch {
	case res.err == nil && res.ok:
		t.outs[res.i] = outcome{acquired: true, token: res.token}
		t.won++
		return
	case pending:
		ne.Outcome = OutcomePending
	case res.err == nil:
		ne.Outcome = OutcomeHeld
	case core.TimedOut(res.err) || t.nctx.Err() != nil:
		ne.Outcome = OutcomeTimeout
	}
	t.failed++
	t.outs[res.i] = outcome{err: ne}
}

// collect counts answers until all came, the node timeout passed, or the grace ended.
func (t *tally) collect(quorum int) {
	n := len(t.nodes)
	// Once decided, the others get as long again as that took, plus
	// graceSlack: healthy ones answer within it, a stalled one costs no more.
	var grace <-chan time.Time
	began := time.Now()
	for got := 0; got < n; got++ {
		if (t.won >= quorum || t.failed > n-quorum) && grace == nil {
			timer := time.NewTimer(time.Since(began) + graceSlack)
			defer timer.Stop()
			grace = timer.C
		}
		select {
		case res := <-t.results:
			t.record(res, false)
		case <-grace:
			return
		case <-t.nctx.Done():
			return
		}
	}
}

// leaveBehind leaves behind the members that have not answered, but for
// answers on their way.
func (t *tally) leaveBehind() {
	timedOut := t.nctx.Err() // nil: decided in time, so the rest are pending
	inFlight := 0
	for i := range t.nodes {
		switch {
		case t.outs[i] != (outcome{}): // answered
		case t.claimed[i].CompareAndSwap(false, true):
			t.record(answer{i: i, err: timedOut}, timedOut == nil)
			t.outs[i].behind = true
		default:
			inFlight++
		}
	}
	for range inFlight {
		t.record(<-t.results, false)
	}
}

// giveBack releases round r on the members in which, in the background;
// the channel closes when each has answered or given up.
func (l *Lock) giveBack(ctx context.Context, r *round, which []bool) <-chan struct{} {
	ctx = core.Detached(ctx)
	done := make(chan struct{})
	var left atomic.Int32
	left.Store(int32(marked(which)))
	if left.Load() == 0 {
		close(done)
		return done
	}
	l.bg.add(int(left.Load()))
	l.each(which, func(_ int, n core.Member) {
		defer l.bg.done()
		_, _ = n.Release(ctx, r.id, l.cfg.UnlockTimeout)
		if left.Add(-1) == 0 {
			close(done)
		}
	})
	return done
}

// mayHold marks the members whose error came after their script may have
// run, so may hold an uncounted grant of round r (those left behind give
// back their own); nil for a re-entry, which gives back only what it counted on.
func (r *round) mayHold(outs []outcome) []bool {
	if r.reentry {
		return nil
	}
	which := make([]bool, len(outs))
	for i, o := range outs {
		e := o.err
		which[i] = !o.behind && e != nil && e.Outcome != OutcomeHeld && (e.Err == nil || core.MayHaveRun(e.Err))
	}
	return which
}

// release releases the members the hold won, in parallel, returning once a
// quorum (multi-lock: all) released or can no longer; the rest run on (Drain).
func (l *Lock) release(ctx context.Context, h *core.Hold) error {
	h.Lease.Stop()
	r := h.Taken.(*round)
	if !r.ended.CompareAndSwap(false, true) {
		return nil
	}
	total := marked(r.won)
	need := min(l.quorum, total)
	results := make(chan answer, total)
	l.bg.add(total)
	bgCtx := core.Detached(ctx) // the releases outlive the call, and Drain waits for them
	l.each(r.won, func(i int, n core.Member) {
		defer l.bg.done()
		_, err := n.Release(bgCtx, r.id, l.cfg.UnlockTimeout)
		results <- answer{i: i, err: err}
	})
	// Wait up to the node timeout, as a round does; the rest go on in the background.
	bound := l.nodeTimeout(h.Lease.Timeout())
	timer := time.NewTimer(bound)
	defer timer.Stop()
	answered := make([]bool, len(l.nodes))
	released := 0
	var failed memberErrors
	for released < need && len(failed) <= total-need {
		select {
		case res := <-results:
			answered[res.i] = true
			if res.err == nil {
				released++
			} else {
				n := l.nodes[res.i]
				failed = append(failed, &NodeError{Index: res.i, Node: n.Addr + " " + n.Name, Outcome: OutcomeError, Err: res.err})
			}
		case <-timer.C: // the unanswered fail, which ends the loop
			for i, n := range l.nodes {
				if r.won[i] && !answered[i] {
					failed = append(failed, &NodeError{Index: i, Node: n.Addr + " " + n.Name, Outcome: OutcomeTimeout,
						Err: fmt.Errorf("no reply within the node timeout %v (the release goes on in the background)", bound)})
				}
			}
		}
	}
	span := trace.SpanFromContext(ctx)
	for _, f := range failed {
		span.AddEvent("release failed", trace.WithAttributes(attribute.String("member", f.Error())))
	}
	if released >= need {
		return nil
	}
	return fmt.Errorf("released %d of %d members, quorum %d: %w", released, len(l.nodes), l.quorum, failed)
}
