package redlock

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/relock-go/relock/internal/conn"
	"github.com/relock-go/relock/internal/core"
)

// A round is one attempt on every member under one member owner id. A
// fresh acquisition mints a new id for each round, so that whatever of a
// round reaches a member late (a give-back, an attempt left behind) can
// only touch that round's own field, never a later hold of the same
// caller. A re-entry (ctx carries an owner: a hold of this Lock, or of a
// member's other side) uses that id, so that the members count it; its
// give-backs touch only the members it is known to have counted on.

// round is what a round won, kept in its hold.
type round struct {
	id      string // the members' owner field
	reentry bool
	won     []bool // by member
	// ended: released, or given back after a loss; nothing more to do.
	ended atomic.Bool
}

// background counts what a Lock left running (attempts left behind,
// give-backs, releases past the quorum), for Drain.
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

// Drain waits until what this Lock left running in the background has
// ended, or ctx ends: attempts on members that had not answered when a
// round was decided (each given back if it took its member), the
// give-backs of failed rounds and of lost holds, and the releases that
// Unlock did not wait for once the quorum had released. Each of them is
// bounded by the node or the unlock timeout, and none needs Drain to
// finish; call it before a program or a test ends, so that nothing of the
// Lock is still running.
func (l *Lock) Drain(ctx context.Context) error {
	if err := l.ident().Check("drain", ctx, unmade); err != nil {
		return err
	}
	if err := l.bg.wait(ctx); err != nil {
		return l.id.Wrap("drain", err)
	}
	return nil
}

// graceSlack is added to the grace the other members get once a round
// won its quorum: scheduling noise on a loaded client.
const graceSlack = 10 * time.Millisecond

// tryAll makes one attempt on every member at once for round r, each
// bounded by the node timeout, and returns as soon as the outcome is
// decided (the quorum won, or out of reach) and the other members have
// answered or are past their grace (as long again as the decision took). The attempts still
// running then go on in the background: one that takes its member
// afterwards gives it back at once (a fresh round's also when its reply
// was lost). Answers already on their way when the round is decided are
// counted, so a member whose grant arrives then joins the hold.
func (l *Lock) tryAll(ctx context.Context, r *round, lease time.Duration) []outcome {
	// Not cancelled when the round is decided: an attempt left behind
	// must still learn whether it took its member, to give it back.
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

// tally is what tryAll knows of a round's members: their outcomes so far,
// and the attempts' answers still to come.
type tally struct {
	nodes []core.Member
	nctx  context.Context // the attempts', bounded by the node timeout
	outs  []outcome
	// Each attempt and the round's decision race for claimed[i]: the
	// attempt's result counts only if it claims first.
	claimed     []atomic.Bool
	results     chan answer
	answered    []bool
	won, failed int
}

// startAttempts starts round r's attempt on every member, each on the
// member's worker. An attempt whose answer the round no longer counts
// gives back what it may have taken; the last one to return calls stop.
func (l *Lock) startAttempts(ctx context.Context, r *round, lease time.Duration, t *tally, stop context.CancelFunc) {
	nctx, claimed, results := t.nctx, t.claimed, t.results
	var running atomic.Int32
	running.Store(int32(len(l.nodes)))
	l.bg.add(1)
	giveBackCtx := conn.Detached(ctx)
	for i, node := range l.nodes {
		node.Workers.Go(func() {
			ok, token, ttl, err := node.Try(nctx, r.id, lease)
			if claimed[i].CompareAndSwap(false, true) {
				results <- answer{i, ok, token, ttl, err}
			} else if ok || (!r.reentry && err != nil && conn.MayHaveRun(err)) {
				_, _ = node.Release(giveBackCtx, r.id, l.cfg.UnlockTimeout)
			}
			if running.Add(-1) == 0 {
				stop()
				l.bg.done()
			}
		})
	}
}

// record counts a member's answer; pending: the round was decided before
// it answered.
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
	case conn.Timeout(res.err) || t.nctx.Err() != nil:
		ne.Outcome, ne.Err = OutcomeTimeout, res.err
	default:
		ne.Outcome, ne.Err = OutcomeError, res.err
	}
	t.failed++
	t.outs[res.i] = outcome{ttl: res.ttl, err: ne}
}

// collect counts the answers until every member answered, the node
// timeout passed, or the grace after the decision ended.
func (t *tally) collect(quorum int) {
	n := len(t.nodes)
	// Once the outcome is decided (the quorum won, or out of reach), the
	// other members get a grace as long again as that took (and
	// graceSlack): healthy members answer within it, to join the hold or
	// be reported, while a stalled one costs no more than that.
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

// leaveBehind ends the count once the round is decided, or the node
// timeout passed: the members that have not answered are left behind,
// but for those whose answer is on its way.
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

// giveBack releases round r's count on the members in which in the
// background, each on a worker and bounded by the unlock
// timeout, and returns a channel closed when every one has answered or
// given up.
func (l *Lock) giveBack(ctx context.Context, r *round, which []bool) <-chan struct{} {
	ctx = conn.Detached(ctx)
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
		n.Workers.Go(func() {
			defer l.bg.done()
			_, _ = n.Release(ctx, r.id, l.cfg.UnlockTimeout)
			if left.Add(-1) == 0 {
				close(done)
			}
		})
	}
	return done
}

// mayHold marks the members of a round that answered with an error after
// their script may have run: they may hold a grant of the round that
// nobody counted. (An attempt left behind gives back its own.) nil when
// there is none.
func mayHold(outs []outcome) []bool {
	var which []bool
	for i, o := range outs {
		if o.acquired || o.behind || o.err == nil || o.err.Outcome == OutcomeHeld {
			continue
		}
		if o.err.Err != nil && !conn.MayHaveRun(o.err.Err) {
			continue
		}
		if which == nil {
			which = make([]bool, len(outs))
		}
		which[i] = true
	}
	return which
}

// release is the hold's release: the members it won, in parallel. It
// returns once a quorum of them (for a multi-lock: all) has released, or
// can no longer; the others finish in the background (see Drain).
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
	bgCtx := conn.Detached(ctx) // the releases outlive the call, and Drain waits for them
	for i, n := range l.nodes {
		if !r.won[i] {
			continue
		}
		n.Workers.Go(func() {
			defer l.bg.done()
			_, err := n.Release(bgCtx, r.id, l.cfg.UnlockTimeout)
			results <- result{i, err}
		})
	}
	// The call waits for the members up to the node timeout, as a round
	// does; a release still unanswered then goes on in the background.
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

// releaseLost gives back, in the background, what survives of a hold the
// watchdog found lost: the other members would otherwise stay taken until
// their lease ran out. It runs on the goroutine that found the loss, so
// it only hands the work to the members' workers.
func (l *Lock) releaseLost(r *round) {
	if r.ended.CompareAndSwap(false, true) {
		l.giveBack(context.Background(), r, r.won)
	}
}
