package lease

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/relock-go/relock/internal/conn"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/relock-go/relock/internal/scripts"
	"github.com/relock-go/relock/internal/telemetry"
	"github.com/relock-go/relock/tracing"
)

var errGone = errors.New("lease key gone")

var renewSpanStart = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindClient)}

func (r renewal) targetOf() *Target { return &r.l.spec.Targets[r.target] }

// send renews a round's batch on the wheel's goroutine. Over several clients
// (a Redlock's masters) it sends the largest share itself and the others on
// each client's asideQueue goroutine, so a stalled master holds back no one.
func (w *Watchdog) send(batch []renewal, sentAt time.Time) {
	c0 := batch[0].targetOf().Client
	if !slices.ContainsFunc(batch[1:], func(r renewal) bool { return r.targetOf().Client != c0 }) {
		w.flush(c0, batch, sentAt)
		return
	}
	_, byClient := groupBy(batch, func(r renewal) conn.Client { return r.targetOf().Client })
	var inline conn.Client
	for c, rs := range byClient {
		if inline == (conn.Client{}) || len(rs) > len(byClient[inline]) {
			inline = c
		}
	}
	for c, rs := range byClient {
		if c != inline {
			w.sendAside(c, rs, sentAt)
		}
	}
	w.flush(inline, byClient[inline], sentAt)
}

// asideQueue queues renewals for a client whose asideQueue goroutine is busy.
type asideQueue struct {
	rs     []renewal
	sentAt time.Time // start of the earliest round queued
}

// sendAside queues rs for c's asideQueue goroutine (one per client, however long c stalls).
func (w *Watchdog) sendAside(c conn.Client, rs []renewal, sentAt time.Time) {
	w.mu.Lock()
	if q := w.asideQueues[c]; q != nil {
		if len(q.rs) == 0 {
			q.sentAt = sentAt
		}
		q.rs = append(q.rs, rs...)
		w.mu.Unlock()
		return
	}
	w.asideQueues[c] = &asideQueue{}
	w.mu.Unlock()
	go w.drain(c, rs, sentAt)
}

func (w *Watchdog) drain(c conn.Client, rs []renewal, sentAt time.Time) {
	for {
		w.flush(c, rs, sentAt)
		w.mu.Lock()
		q := w.asideQueues[c]
		if len(q.rs) == 0 {
			delete(w.asideQueues, c)
			w.mu.Unlock()
			return
		}
		rs, sentAt = q.rs, q.sentAt
		q.rs = nil
		w.mu.Unlock()
	}
}

type scriptGroup struct {
	kind *RenewScript
	slot int
}

// renewScriptCall is one renewal script: at most w.batch leases of one (kind, slot).
type renewScriptCall struct {
	kind   *RenewScript
	rs     []renewal
	cmd    conn.Cmd
	reload bool // the server lacked the script: send it as EVAL
}

// flush sends rs to c: one script per renewScriptCall, in pipelines of at
// most w.pipeLeases leases, in turn, each under its own deadline (go-redis
// honours it only with ContextTimeoutEnabled; else its read timeout does).
func (w *Watchdog) flush(c conn.Client, rs []renewal, sentAt time.Time) {
	cluster := c.Cluster()
	keys, groups := groupBy(rs, func(r renewal) scriptGroup {
		t := r.targetOf()
		g := scriptGroup{kind: r.l.renewer(t)}
		if cluster {
			g.slot = conn.Slot(t.Keys[0])
		}
		return g
	})
	var calls []renewScriptCall
	for _, g := range keys {
		for grs := groups[g]; len(grs) > 0; {
			n := min(len(grs), w.batch)
			calls = append(calls, renewScriptCall{kind: g.kind, rs: grs[:n:n]})
			grs = grs[n:]
		}
	}
	if cluster && len(calls) > 1 {
		w.flushNodes(c, calls, sentAt)
		return
	}
	w.execAll(c, calls, sentAt)
}

// groupBy splits xs by key, the keys in the order they first come.
func groupBy[K comparable, T any](xs []T, key func(T) K) ([]K, map[K][]T) {
	var keys []K
	groups := map[K][]T{}
	for _, x := range xs {
		k := key(x)
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], x)
	}
	return keys, groups
}

// execAll sends calls in pipelines of at most w.pipeLeases leases, in turn.
func (w *Watchdog) execAll(c conn.Client, calls []renewScriptCall, sentAt time.Time) {
	for len(calls) > 0 {
		n, leases := 0, 0
		for n < len(calls) && (n == 0 || leases+len(calls[n].rs) <= w.pipeLeases) {
			leases += len(calls[n].rs)
			n++
		}
		if span, synced := w.sendPipeline(c, calls[:n]); span != nil { // nil: nothing left to renew
			w.record(span, calls[:n], sentAt, synced)
			span.End()
		}
		calls = calls[n:]
	}
}

// flushNodes sends each master's calls as its own pipelines, concurrently: in one
// cluster pipeline, a context ending while go-redis retries a dead master fails
// every command, the live masters' renewals too, losing every lease.
func (w *Watchdog) flushNodes(c conn.Client, calls []renewScriptCall, sentAt time.Time) {
	addrs, byNode := groupBy(calls, func(p renewScriptCall) string {
		if n, err := c.Node(context.Background(), p.rs[0].targetOf().Keys[0]); err == nil {
			return n.Addr()
		}
		return "" // unknown master: sent on its own, and fails on its own
	})
	if len(addrs) == 1 {
		w.execAll(c, calls, sentAt)
		return
	}
	var wg sync.WaitGroup
	for _, addr := range addrs[1:] {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.execAll(c, byNode[addr], sentAt)
		}()
	}
	w.execAll(c, byNode[addrs[0]], sentAt)
	wg.Wait()
}

// pipelineSync is the WAIT of a pipeline that renews synced leases.
type pipelineSync struct {
	p    scripts.ReplicaPolicy // the strictest of its leases'
	plan scripts.Renewals
	wait conn.Cmd
}

// err is why a renewal synced under p does not count (nil if it does or p is off).
func (s *pipelineSync) err(p scripts.ReplicaPolicy) error {
	if s == nil || p.Timeout <= 0 {
		return nil
	}
	return s.plan.Acked(p, s.wait)
}

// syncOf plans the WAIT for the leases' strictest sync on their slot's server (nil: none).
func syncOf(c conn.Client, calls []renewScriptCall) *pipelineSync {
	var p scripts.ReplicaPolicy
	var key string // of the pipeline's slot
	for _, pt := range calls {
		for _, r := range pt.rs {
			key = r.targetOf().Keys[0]
			if s := r.l.spec.Sync; s.Timeout > 0 {
				p.Timeout, p.Min = max(p.Timeout, s.Timeout), max(p.Min, s.Min)
				p.Logger = s.Logger
			}
		}
	}
	if p.Timeout <= 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), p.Timeout)
	defer cancel()
	return &pipelineSync{p: p, plan: scripts.SyncRenewals(ctx, c, p, key)}
}

// sendPipeline sends calls as one pipeline, again with unknown scripts as EVAL
// after NOSCRIPT (a renewal run twice renews twice); nil span: nothing sent.
func (w *Watchdog) sendPipeline(c conn.Client, calls []renewScriptCall) (trace.Span, *pipelineSync) {
	var span trace.Span
	spanCtx := context.Background()
	synced := syncOf(c, calls)
	on := c
	if synced != nil && synced.plan.Node != (conn.Client{}) {
		on = synced.plan.Node // the WAIT answers for its own connection's writes
	}
	for attempt := 0; attempt < 2; attempt++ {
		pipe := w.build(calls)
		deadline, live, dropped := w.commit(calls)
		if live == 0 {
			break
		}
		if dropped {
			pipe = w.build(calls)
		}
		// A reply is of use until the earliest loss it carries; big pipelines take longer.
		timeout := max(deadline.Sub(w.clock.Now()), minReplyTimeout)
		if synced != nil {
			synced.wait = synced.plan.Wait(spanCtx, min(synced.p.Timeout, timeout*3/4))
			if !synced.wait.Zero() {
				pipe = append(pipe, synced.wait)
			}
		}
		if span == nil {
			spanCtx, span = w.tracer.Start(context.Background(), tracing.SpanWatchdogRenew, renewSpanStart...)
		}
		ctx, cancel := context.WithTimeout(spanCtx, timeout)
		w.stats.roundTrips.Add(1)
		w.stats.scripts.Add(int64(len(pipe)))
		on.Exec(ctx, pipe...) // per-command errors are read below
		cancel()
		if !reloadMissing(calls) {
			break
		}
	}
	return span, synced
}

// reloadMissing marks the calls whose script the server lacked (NOSCRIPT)
// to resend as EVAL, which loads it, and reports whether any were.
func reloadMissing(calls []renewScriptCall) bool {
	missing := false
	for i := range calls {
		if p := &calls[i]; !p.cmd.Zero() && scripts.IsNoScript(p.cmd.Reply().Err()) {
			p.reload, missing = true, true
		}
	}
	return missing
}

// record reads the replies, completes each lease's renewal (telling of
// losses once the lock is released) and sets the span's counts.
func (w *Watchdog) record(span trace.Span, calls []renewScriptCall, sentAt time.Time, synced *pipelineSync) {
	now := w.clock.Now()
	var lost []lossNotice
	var renewed, gone, failed int
	var firstErr error
	w.mu.Lock()
	for _, p := range calls {
		if p.cmd.Zero() {
			continue
		}
		vals, err := p.cmd.Reply().Slice()
		for i, r := range p.rs {
			res := errGone
			switch {
			case err != nil:
				res = err
			case i < len(vals) && vals[i] == int64(1):
				res = synced.err(r.l.spec.Sync) // renewed, and acknowledged as its hold asks
			}
			switch {
			case res == nil:
				renewed++
			case res == errGone:
				gone++
				w.metrics.Failed(r.l.spec.Primitive, telemetry.Gone, 1)
			default:
				failed++
				firstErr = cmp.Or(firstErr, res)
				w.metrics.Failed(r.l.spec.Primitive, failureReason(res), 1)
			}
			if lc, ok := w.completeLocked(r, res, sentAt, now); ok {
				lost = append(lost, lc)
			}
		}
	}
	w.mu.Unlock()
	if span.IsRecording() {
		span.SetAttributes(tracing.WatchdogLeases.Int(renewed+gone+failed), tracing.WatchdogRenewed.Int(renewed),
			tracing.WatchdogGone.Int(gone), tracing.WatchdogFailed.Int(failed))
		if firstErr != nil {
			span.RecordError(firstErr)
			span.SetStatus(codes.Error, firstErr.Error())
		}
	}
	for _, n := range lost {
		n.tell()
	}
}

// failureReason classifies a renewal's error for the metrics.
func failureReason(err error) telemetry.Reason {
	if conn.Timeout(err) {
		return telemetry.ReplyTimeout
	}
	return telemetry.Failed
}

// build returns the pipeline: one script per non-empty renewScriptCall.
func (w *Watchdog) build(calls []renewScriptCall) []conn.Cmd {
	pipe := make([]conn.Cmd, 0, len(calls)+1) // room for a WAIT
	for i := range calls {
		pt := &calls[i]
		pt.cmd = conn.Cmd{}
		if len(pt.rs) == 0 {
			continue
		}
		pt.cmd = pt.kind.cmd(pt.rs, pt.reload)
		pipe = append(pipe, pt.cmd)
	}
	return pipe
}

// cmd is the script's command for rs, leases of one slot, laid out as
// RenewScript says; reload sends the source (EVAL) in place of the hash.
func (k *RenewScript) cmd(rs []renewal, reload bool) conn.Cmd {
	nkeys := 0
	for _, r := range rs {
		nkeys += len(r.targetOf().Keys)
	}
	argv := make([]any, nkeys, nkeys+len(rs)*2)
	ks := argv[:0]                              // the keys come first, then each lease's arguments
	lastT, boxed := time.Duration(-1), any(nil) // the lease time, boxed once per call mostly
	for _, r := range rs {
		t := r.targetOf()
		if to := r.l.spec.Timeout; to != lastT {
			lastT, boxed = to, to.Milliseconds()
		}
		for _, key := range t.Keys {
			ks = append(ks, key)
		}
		argv = append(argv, boxed, t.Arg)
	}
	cmd := k.Lua.With(nkeys, argv...).Cmd(context.Background())
	if reload {
		cmd = k.Lua.Reload(context.Background(), cmd)
	}
	return cmd
}
