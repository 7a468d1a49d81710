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

func (b *background) add(n int) {
	b.mu.Lock()
	if b.n == 0 {
		b.idle = make(chan struct{})
	}
	b.n += n
	b.mu.Unlock()
}

func (b *background) done() {
	b.mu.Lock()
	if b.n--; b.n == 0 {
		close(b.idle)
	}
	b.mu.Unlock()
}

func (b *background) wait(ctx context.Context) error {
	b.mu.Lock()
	if b.n == 0 {
		b.mu.Unlock()
		return nil
	}
	idle := b.idle
	b.mu.Unlock()
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
	if err := l.bg.wait(ctx); err != nil {
		return l.id.Wrap("drain", err)
	}
	return nil
}

// graceSlack is added to the grace after a decision: scheduling noise.
const graceSlack = 10 * time.Millisecond

// tryAll makes round r's attempts and returns once the outcome is decided
// and the others answered or are past their grace (late answers join).
func (l *Lock) tryAll(ctx context.Context, r *round, lease time.Duration) []outcome {
	// Not cancelled on decision: an attempt left behind must learn whether to give back.
	nctx, cancel := context.WithTimeout(ctx, l.nodeTimeout(lease))
	n := len(l.nodes)
	t := &tally{
		nodes:    l.nodes,
		nctx:     nctx,
		outs:     make([]outcome, n),
		claimed:  make([]atomic.Bool, n),
		results:  make(chan answer, n),
		answered: make([]bool, n),
	}
	l.startAttempts(ctx, r, lease, t, cancel)
	t.collect(l.quorum)
	t.leaveBehind()
	return t.outs
}

// answer is one member's reply to a round's attempt.
type answer struct {
	i     int
	ok    bool
	token int64
	ttl   time.Duration
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
	answered    []bool
	won, failed int
}

// startAttempts starts round r's attempt on every member's worker; one
// the round no longer counts gives back what it may have taken.
func (l *Lock) startAttempts(ctx context.Context, r *round, lease time.Duration, t *tally, stop context.CancelFunc) {
	nctx, claimed, results := t.nctx, t.claimed, t.results
	var running atomic.Int32
	running.Store(int32(len(l.nodes)))
	l.bg.add(1)
	giveBackCtx := core.Detached(ctx)
	for i, node := range l.nodes {
		node.Client.Go(func() {
			ok, token, ttl, err := node.Try(nctx, r.id, lease)
			if claimed[i].CompareAndSwap(false, true) {
				results <- answer{i, ok, token, ttl, err}
			} else if ok || (!r.reentry && mayHaveRun(err)) {
				_, _ = node.Release(giveBackCtx, r.id, l.cfg.UnlockTimeout)
			}
			if running.Add(-1) == 0 {
				stop()
				l.bg.done()
			}
		})
	}
}

// record counts a member's answer; pending: the round was decided before it.
func (t *tally) record(res answer, pending bool) {
	t.answered[res.i] = true
	ne := &NodeError{Index: res.i, Node: t.nodes[res.i].Addr + " " + t.nodes[res.i].Name}
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
		ne.Outcome, ne.Err = OutcomeTimeout, res.err
	default:
		ne.Outcome, ne.Err = OutcomeError, res.err
	}
	t.failed++
	t.outs[res.i] = outcome{ttl: res.ttl, err: ne}
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
	timedOut := t.nctx.Err() != nil
	inFlight := 0
	for i := range t.nodes {
		switch {
		case t.answered[i]:
		case t.claimed[i].CompareAndSwap(false, true):
			if timedOut {
				t.record(answer{i: i, err: t.nctx.Err()}, false)
			} else {
				t.record(answer{i: i}, true)
			}
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
	for _, w := range which {
		if w {
			left.Add(1)
		}
	}
	if left.Load() == 0 {
		close(done)
		return done
	}
	l.bg.add(int(left.Load()))
	for i, n := range l.nodes {
		if !which[i] {
			continue
		}
		n.Client.Go(func() {
			defer l.bg.done()
			_, _ = n.Release(ctx, r.id, l.cfg.UnlockTimeout)
			if left.Add(-1) == 0 {
				close(done)
			}
		})
	}
	return done
}

// mayHold marks the members whose error came after their script may have
// run, so may hold an uncounted grant (those left behind give back their
// own); nil when none.
func mayHold(outs []outcome) []bool {
	var which []bool
	for i, o := range outs {
		if o.acquired || o.behind || o.err == nil || o.err.Outcome == OutcomeHeld {
			continue
		}
		if o.err.Err != nil && !mayHaveRun(o.err.Err) {
			continue
		}
		if which == nil {
			which = make([]bool, len(outs))
		}
		which[i] = true
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
	total := 0
	for _, w := range r.won {
		if w {
			total++
		}
	}
	need := min(l.quorum, total)
	type result struct {
		i   int
		err error
	}
	results := make(chan result, total)
	l.bg.add(total)
	bgCtx := core.Detached(ctx) // the releases outlive the call, and Drain waits for them
	for i, n := range l.nodes {
		if !r.won[i] {
			continue
		}
		n.Client.Go(func() {
			defer l.bg.done()
			_, err := n.Release(bgCtx, r.id, l.cfg.UnlockTimeout)
			results <- result{i, err}
		})
	}
	// Wait up to the node timeout, as a round does; the rest go on in the background.
	bound := l.nodeTimeout(h.Lease.Timeout())
	timer := time.NewTimer(bound)
	defer timer.Stop()
	answered := make([]bool, len(l.nodes))
	released := 0
	var failed memberErrors
collect:
	for got := 0; got < total && released < need && len(failed) <= total-need; got++ {
		var res result
		select {
		case res = <-results:
		case <-timer.C:
			break collect
		}
		answered[res.i] = true
		if res.err == nil {
			released++
			continue
		}
		n := l.nodes[res.i]
		failed = append(failed, &NodeError{Index: res.i, Node: n.Addr + " " + n.Name, Outcome: OutcomeError, Err: res.err})
	}
	if released < need && len(failed) <= total-need {
		for i, n := range l.nodes {
			if r.won[i] && !answered[i] {
				failed = append(failed, &NodeError{Index: i, Node: n.Addr + " " + n.Name, Outcome: OutcomeTimeout,
					Err: fmt.Errorf("no reply within the node timeout %v (the release goes on in the background)", bound)})
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

// releaseLost gives back what survives of a lost hold in the background:
// it runs on the goroutine that found the loss.
func (l *Lock) releaseLost(r *round) {
	if r.ended.CompareAndSwap(false, true) {
		l.giveBack(context.Background(), r, r.won)
	}
}

// mayHaveRun reports an error after which a member's script may have run.
func mayHaveRun(err error) bool {
	_, uncertain := core.Lost(err)
	return uncertain
}
