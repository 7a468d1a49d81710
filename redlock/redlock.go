package redlock

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/relock-go/relock/internal/acquire"
	"github.com/relock-go/relock/internal/errs"
	"github.com/relock-go/relock/internal/hold"
	"github.com/relock-go/relock/internal/member"
	"github.com/relock-go/relock/internal/options"
	"github.com/relock-go/relock/internal/owner"
	"github.com/relock-go/relock/internal/telemetry"
	"github.com/relock-go/relock/internal/workers"
	"github.com/relock-go/relock/tracing"
	"github.com/relock-go/relock/watchdog"
)

// The sentinel errors, the same values in every relock package.
var (
	ErrNotAcquired     = errs.ErrNotAcquired
	ErrNotHeld         = errs.ErrNotHeld
	ErrLockLost        = errs.ErrLockLost
	ErrInvalidArgument = errs.ErrInvalidArgument
)

// Member is a lock on one Redis that a Redlock can drive: *lock.Mutex,
// and the ReadLocker and WriteLocker sides of an *rwlock.RWMutex.
type Member interface {
	RedlockNode() (member.Node, error)
}

// Option configures a Lock: the options of package lock, plus
// WithNodeTimeout and WithDrift.
type Option = options.Option

// WithLeaseTime: see lock.WithLeaseTime.
func WithLeaseTime(d time.Duration) Option { return options.WithLeaseTime(d) }

// WithWatchdogTimeout: see lock.WithWatchdogTimeout.
func WithWatchdogTimeout(d time.Duration) Option { return options.WithWatchdogTimeout(d) }

// WithWaitTimeout: see lock.WithWaitTimeout.
func WithWaitTimeout(d time.Duration) Option { return options.WithWaitTimeout(d) }

// WithUnlockTimeout: see lock.WithUnlockTimeout.
func WithUnlockTimeout(d time.Duration) Option { return options.WithUnlockTimeout(d) }

// WithTracerProvider: see lock.WithTracerProvider.
func WithTracerProvider(tp trace.TracerProvider) Option { return options.WithTracerProvider(tp) }

// WithMeterProvider: see lock.WithMeterProvider. A Redlock also records
// the members won by each round (relock.redlock.nodes_won).
func WithMeterProvider(mp metric.MeterProvider) Option { return options.WithMeterProvider(mp) }

// WithNameInMetrics: see lock.WithNameInMetrics (off by default, for
// cardinality); the name is the members' names joined with commas.
func WithNameInMetrics() Option { return options.WithNameInMetrics() }

// WithWatchdog: see lock.WithWatchdog.
func WithWatchdog(w *watchdog.Watchdog) Option { return options.WithWatchdog(w) }

// WithNodeTimeout bounds each member's attempt (default lease/10), so a
// dead master costs about that, not the client's own timeouts.
func WithNodeTimeout(d time.Duration) Option { return options.WithNodeTimeout(d) }

// WithDrift sets the clock drift allowance subtracted from the validity
// time (default lease/100 + 2 ms).
func WithDrift(d time.Duration) Option { return options.WithDrift(d) }

// Node outcomes in a NodeError.
const (
	OutcomeAcquired = "acquired"
	OutcomeHeld     = "held by another owner"
	OutcomeTimeout  = "timeout"
	OutcomeError    = "error"
)

// NodeError is one member's outcome in an attempt that did not reach the
// quorum (or a release that failed). errors.Is(err, ErrNotAcquired) holds
// for OutcomeHeld.
type NodeError struct {
	Index   int    // the member's position
	Node    string // its Redis address and lock name
	Outcome string
	Err     error // the cause, for OutcomeTimeout and OutcomeError
}

// Error names the member and its outcome.
func (e *NodeError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("member %d (%s): %s: %v", e.Index, e.Node, e.Outcome, e.Err)
	}
	return fmt.Sprintf("member %d (%s): %s", e.Index, e.Node, e.Outcome)
}

// Unwrap returns the member's error: ErrNotAcquired when another owner
// held it, else its error (nil when there was none).
func (e *NodeError) Unwrap() error {
	if e.Outcome == OutcomeHeld {
		return ErrNotAcquired
	}
	return e.Err
}

// Lock is one lock over several members: New needs a quorum of them
// (Redlock, across independent masters), NewMulti all of them (lock
// several resources together).
type Lock struct {
	nodes   []member.Node
	quorum  int
	multi   bool
	cfg     options.Config
	invalid string
	name    string
	tracer  trace.Tracer
	// spanStart: kind and the attributes that never change, made once.
	spanStart []trace.SpanStartOption
	metrics   *telemetry.Recorder
	rel       *telemetry.Release // release span and hold metrics
	// workers try and release the members: reused goroutines, whose
	// stacks have grown through the client's call path already.
	workers *workers.Pool
	// givingBack: the give-backs of failed rounds still running, by
	// owner (see giveBack); a round of the same owner waits for them.
	givingMu   sync.Mutex
	givingBack map[string]*giveBackRun
	giving     atomic.Int32 // len(givingBack): a round reads only this when 0
}

// New returns a Redlock over members, one per independent Redis master:
// it is held when len(members)/2+1 of them are. Bad arguments (no
// members, a nil or invalid member, a bad option) are reported as
// ErrInvalidArgument by every method.
func New(members []Member, opts ...Option) *Lock { return newLock(members, false, opts) }

// NewMulti returns a lock held when every member is: several resources
// (on one Redis or many) locked together, all or nothing.
func NewMulti(members []Member, opts ...Option) *Lock { return newLock(members, true, opts) }

func newLock(members []Member, multi bool, opts []Option) *Lock {
	l := &Lock{multi: multi, cfg: options.Apply(opts), workers: workers.New(0)}
	names := make([]string, 0, len(members))
	for i, m := range members {
		if m == nil {
			l.invalid = fmt.Sprintf("member %d is nil", i)
			break
		}
		n, err := m.RedlockNode()
		if err != nil {
			reason := strings.TrimPrefix(errs.Reason(err).Error(), errs.ErrInvalidArgument.Error()+": ")
			l.invalid = fmt.Sprintf("member %d: %s", i, reason)
			break
		}
		l.nodes = append(l.nodes, n)
		names = append(names, n.Name)
	}
	l.name = strings.Join(names, ",")
	switch {
	case l.invalid != "":
	case len(members) == 0:
		l.invalid = "no members"
	case l.cfg.Err != "":
		l.invalid = l.cfg.Err
	}
	l.quorum = len(l.nodes)/2 + 1
	if multi {
		l.quorum = len(l.nodes)
	}
	if l.cfg.NodeTimeout <= 0 {
		l.cfg.NodeTimeout = max(l.cfg.Lease()/10, time.Millisecond)
	}
	if l.cfg.Drift < 0 {
		l.cfg.Drift = l.cfg.Lease()/100 + 2*time.Millisecond
	}
	l.tracer = tracing.Tracer(l.cfg.TracerProvider)
	l.spanStart = acquire.SpanStart(
		tracing.LockName.String(l.name),
		tracing.Primitive.String(l.primitive()),
		tracing.Watchdog.Bool(l.cfg.Renewed()),
		tracing.Nodes.Int(len(l.nodes)),
		tracing.Quorum.Int(l.quorum),
	)
	l.metrics = telemetry.For(l.cfg.MeterProvider, l.primitive(), "", l.name, l.cfg.NameInMetrics)
	l.rel = &telemetry.Release{Tracer: l.tracer, Name: tracing.SpanReleaseRedlock, Start: l.spanStart, Metrics: l.metrics}
	return l
}

func (l *Lock) primitive() string {
	if l.multi {
		return "multilock"
	}
	return "redlock"
}

// Name is the members' names joined with commas.
func (l *Lock) Name() string { return l.name }

// Quorum is how many members must be held.
func (l *Lock) Quorum() int { return l.quorum }

func (l *Lock) wrap(op string, err error) error { return errs.New(op, l.primitive(), l.name, err) }

func (l *Lock) check(op string, ctx context.Context) error {
	if l.invalid != "" {
		return errs.Invalid(op, l.primitive(), l.name, l.invalid)
	}
	if ctx == nil {
		return errs.Invalid(op, l.primitive(), l.name, "nil context")
	}
	return nil
}

func (l *Lock) key() hold.Key {
	return hold.Key{Kind: l.primitive(), Name: fmt.Sprintf("%p", l)}
}

// Lock takes the lock: every member is tried in parallel, each bounded by
// the node timeout; it is held when the quorum was won within the validity
// time (lease - elapsed - drift). Otherwise every member is released and,
// after a random delay, it tries again, until ctx or WithWaitTimeout ends
// the wait. The returned context is as lock.Mutex.Lock's; its fencing
// token is the largest of the members won (advisory: see the package
// documentation).
func (l *Lock) Lock(ctx context.Context) (context.Context, error) {
	return l.acquire(ctx, "lock", false)
}

// TryLock makes one round: ErrNotAcquired (joined with each member's
// outcome) when the quorum was not won.
func (l *Lock) TryLock(ctx context.Context) (context.Context, error) {
	return l.acquire(ctx, "trylock", true)
}

type outcome struct {
	acquired bool
	token    int64
	ttl      time.Duration
	err      *NodeError
}

func (l *Lock) acquire(ctx context.Context, op string, once bool) (context.Context, error) {
	if err := l.check(op, ctx); err != nil {
		return nil, err
	}
	ctx, ownerID := owner.Ensure(ctx)
	lease := l.cfg.Lease()
	sctx, span := l.tracer.Start(ctx, tracing.SpanAcquireRedlock, l.spanStart...)
	defer span.End()
	recording := span.IsRecording()
	measured := l.metrics.AcquireEnabled(sctx)
	if recording {
		span.SetAttributes(
			tracing.Owner.String(ownerID),
			tracing.LeaseMillis.Int64(lease.Milliseconds()),
			tracing.Try.Bool(once),
		)
	}
	start := time.Now()
	wctx := sctx
	if l.cfg.WaitTimeout > 0 && !once {
		var cancel context.CancelFunc
		wctx, cancel = context.WithTimeoutCause(sctx, l.cfg.WaitTimeout, errWait)
		defer cancel()
	}

	attempts := 0
	var lastErr error
	finish := func(outcome string, err error) {
		if measured {
			m := telemetry.Acquired
			switch outcome {
			case tracing.OutcomeNotAcquired:
				m = telemetry.NotAcquired
				if !once {
					m = telemetry.Timeout // the wait bound passed
				}
			case tracing.OutcomeCancelled:
				m = telemetry.Cancelled
				if errors.Is(err, context.DeadlineExceeded) {
					m = telemetry.Timeout
				}
			case tracing.OutcomeError:
				m = telemetry.Error
			}
			l.metrics.Acquire(sctx, m, time.Since(start))
		}
		if !recording {
			return
		}
		span.SetAttributes(tracing.Outcome.String(outcome), tracing.Attempts.Int(attempts),
			tracing.WaitMillis.Float64(float64(time.Since(start).Microseconds())/1000))
		if outcome == tracing.OutcomeError {
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
		}
	}
	// ended returns the error of a wait that wctx ended.
	ended := func() error {
		cause := context.Cause(wctx)
		if lastErr == nil {
			lastErr = ErrNotAcquired
		}
		if errors.Is(cause, errWait) {
			finish(tracing.OutcomeNotAcquired, lastErr)
			return l.wrap(op, lastErr)
		}
		finish(tracing.OutcomeCancelled, cause)
		return l.wrap(op, fmt.Errorf("%w (last attempt: %w)", cause, lastErr))
	}
	for {
		attempts++
		// A round does not start while a give-back of this owner's that an
		// earlier call left behind is still running: that release could
		// undo what this round takes. (This narrows the race, it does not
		// close it: a release that timed out, or a try left behind on a
		// stalled member, may still reach that member later. See the
		// package documentation.)
		if !l.awaitGiveBack(wctx, ownerID) {
			return nil, ended()
		}
		// The first round is made whatever the wait bound, as a lock's
		// first try is: a bound shorter than a round trip must not refuse
		// free members. Later rounds are bounded by it.
		roundCtx := wctx
		if attempts == 1 {
			roundCtx = sctx
		}
		sentAt := l.cfg.Watchdog.Now()
		began := time.Now()
		outs := l.tryAll(roundCtx, ownerID, lease)
		elapsed := time.Since(began)
		won, token := 0, int64(0)
		var nodeErrs []error
		for i, o := range outs {
			outcome := OutcomeAcquired
			if o.acquired {
				won++
				token = max(token, o.token)
			} else {
				nodeErrs = append(nodeErrs, o.err)
				outcome = o.err.Outcome
			}
			if recording {
				span.AddEvent("member", trace.WithAttributes(attribute.Int("index", i), attribute.String("outcome", outcome)))
			}
		}
		validity := lease - elapsed - l.cfg.Drift
		if recording {
			span.SetAttributes(tracing.NodesWon.Int(won), tracing.ValidityMillis.Int64(validity.Milliseconds()))
		}
		if measured {
			l.metrics.NodesWon(sctx, won, won >= l.quorum)
		}
		if won >= l.quorum && validity > 0 {
			targets := make([]watchdog.Target, 0, won)
			for i, o := range outs {
				if o.acquired {
					targets = append(targets, l.nodes[i].Renewal(ownerID))
				}
			}
			wl := l.cfg.Watchdog.Start(watchdog.Spec{
				Kind:      targets[0].Kind,
				Targets:   targets,
				Quorum:    l.quorum,
				Timeout:   lease,
				Renew:     l.cfg.Renewed(),
				Name:      l.name,
				Primitive: l.primitive(),
			}, sentAt)
			if recording {
				span.SetAttributes(tracing.FencingToken.Int64(token))
			}
			finish(tracing.OutcomeAcquired, nil)
			return hold.Start(ctx, l.key(), &hold.Hold{Owner: ownerID, Token: token, Lease: wl, Telemetry: l.rel, Traced: recording}, l.release), nil
		}
		// Not held: give back every member, those that seemed to fail too
		// (their reply may have been lost after they took it). This matters
		// for liveness only: a member not given back expires by its lease,
		// and this owner never counts it as held. So the caller is not held
		// past the end of its wait for it: the give-back runs on the
		// workers, each member's bounded by the node timeout, and is
		// waited for only while the wait goes on (wctx; for TryLock the
		// caller's ctx): between rounds it is synchronous, so that the next
		// round does not race its own release, but once the wait has ended
		// (ctx done, the wait timeout) the caller returns at once and the
		// give-back finishes in the background (the workers end 100 ms
		// after it). A later round of the same owner waits for it first
		// (awaitGiveBack).
		waitCtx := wctx
		if once {
			waitCtx = sctx
		}
		giveBackDone := l.giveBack(ctx, ownerID)
		if waitCtx.Err() == nil {
			select {
			case <-giveBackDone:
			case <-waitCtx.Done():
			}
		}
		if won >= l.quorum {
			nodeErrs = append(nodeErrs, fmt.Errorf("validity time used up: took %v of a %v lease", elapsed, lease))
		}
		lastErr = fmt.Errorf("%w: won %d of %d members, quorum %d: %w", ErrNotAcquired, won, len(l.nodes), l.quorum, errors.Join(nodeErrs...))
		if once {
			finish(tracing.OutcomeNotAcquired, lastErr)
			return nil, l.wrap(op, lastErr)
		}
		// Retry after a random delay, within the wait bound.
		delay := time.Duration(rand.Int64N(int64(max(l.cfg.NodeTimeout, 10*time.Millisecond)))) + time.Millisecond
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-wctx.Done():
			t.Stop()
			return nil, ended()
		}
	}
}

// giveBackRun is one owner's give-backs in flight.
type giveBackRun struct {
	n    int           // give-backs running
	done chan struct{} // closed when n drops to 0
}

// giveBack releases ownerID's hold on every member in parallel on the
// workers, each bounded by the node timeout (go-redis's own timeouts bound
// the first attempt, the node timeout its retries), and returns a channel
// closed when all have answered or given up. The caller may leave before:
// the workers finish it, and no goroutine outlives it by more than the
// workers' linger. Until it is done, ownerID is in givingBack.
func (l *Lock) giveBack(ctx context.Context, ownerID string) <-chan struct{} {
	ctx = context.WithoutCancel(ctx)
	l.givingMu.Lock()
	if l.givingBack == nil {
		l.givingBack = make(map[string]*giveBackRun)
	}
	run := l.givingBack[ownerID]
	if run == nil {
		run = &giveBackRun{done: make(chan struct{})}
		l.givingBack[ownerID] = run
		l.giving.Add(1)
	}
	run.n++
	l.givingMu.Unlock()

	done := make(chan struct{})
	var left atomic.Int32
	left.Store(int32(len(l.nodes)))
	for _, n := range l.nodes {
		l.workers.Go(func() {
			_, _ = n.Release(ctx, ownerID, l.cfg.NodeTimeout)
			if left.Add(-1) > 0 {
				return
			}
			close(done)
			l.givingMu.Lock()
			if run.n--; run.n == 0 {
				delete(l.givingBack, ownerID)
				l.giving.Add(-1)
				close(run.done)
			}
			l.givingMu.Unlock()
		})
	}
	return done
}

// awaitGiveBack waits until no give-back of ownerID's is running; false
// when ctx ended first.
func (l *Lock) awaitGiveBack(ctx context.Context, ownerID string) bool {
	if l.giving.Load() == 0 {
		return true
	}
	l.givingMu.Lock()
	run := l.givingBack[ownerID]
	l.givingMu.Unlock()
	if run == nil {
		return true
	}
	select {
	case <-run.done:
		return true
	case <-ctx.Done():
		return false
	}
}

var errWait = errors.New("wait timeout")

// isTimeout: the node did not answer in time (our deadline, or the
// client's own read/dial timeout).
func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}

// tryAll makes one attempt on every member at once, each bounded by the
// node timeout. go-redis bounds a call by its context only with
// ContextTimeoutEnabled, so a stalled node is left behind rather than
// waited for: its attempt goes on in the background and, should it still
// take the lock, gives it back at once.
func (l *Lock) tryAll(ctx context.Context, ownerID string, lease time.Duration) []outcome {
	type result struct {
		i     int
		ok    bool
		token int64
		ttl   time.Duration
		err   error
	}
	n := len(l.nodes)
	outs := make([]outcome, n)
	// Each member's attempt and the deadline race for claimed[i]: the
	// attempt's result counts only if it claims first; one left behind
	// gives back what it took.
	claimed := make([]atomic.Bool, n)
	results := make(chan result, n)
	nctx, cancel := context.WithTimeout(ctx, l.cfg.NodeTimeout)
	defer cancel()
	for i, node := range l.nodes {
		l.workers.Go(func() {
			ok, token, ttl, err := node.Try(nctx, ownerID, lease)
			if claimed[i].CompareAndSwap(false, true) {
				results <- result{i, ok, token, ttl, err}
				return
			}
			if ok {
				_, _ = node.Release(context.WithoutCancel(ctx), ownerID, l.cfg.UnlockTimeout)
			}
		})
	}
	answered := make([]bool, n)
	record := func(r result) {
		answered[r.i] = true
		ne := &NodeError{Index: r.i, Node: l.nodes[r.i].Addr + " " + l.nodes[r.i].Name}
		switch {
		case r.err == nil && r.ok:
			outs[r.i] = outcome{acquired: true, token: r.token}
			return
		case r.err == nil:
			ne.Outcome = OutcomeHeld
		case isTimeout(r.err) || nctx.Err() != nil:
			ne.Outcome, ne.Err = OutcomeTimeout, r.err
		default:
			ne.Outcome, ne.Err = OutcomeError, r.err
		}
		outs[r.i] = outcome{ttl: r.ttl, err: ne}
	}
	for got := 0; got < n; got++ {
		select {
		case r := <-results:
			record(r)
			continue
		case <-nctx.Done():
		}
		// The node timeout passed: the members that have not answered are
		// left behind, except those whose answer is already on its way.
		pending := 0
		for i := range n {
			if !answered[i] && !claimed[i].CompareAndSwap(false, true) {
				pending++
			} else if !answered[i] {
				record(result{i: i, err: nctx.Err()})
			}
		}
		for range pending {
			record(<-results)
		}
		break
	}
	return outs
}

// releaseAll releases owner's hold on every member in parallel and never
// stops half-way; it returns the members that failed.
func (l *Lock) releaseAll(ctx context.Context, ownerID string, timeout time.Duration) []error {
	errsOut := make([]error, len(l.nodes))
	var wg sync.WaitGroup
	for i, n := range l.nodes {
		release := func() {
			if _, err := n.Release(ctx, ownerID, timeout); err != nil {
				errsOut[i] = &NodeError{Index: i, Node: n.Addr + " " + n.Name, Outcome: OutcomeError, Err: err}
			}
		}
		if i == len(l.nodes)-1 {
			release() // the last on this goroutine: one goroutine fewer
			break
		}
		wg.Add(1)
		l.workers.Go(func() {
			defer wg.Done()
			release()
		})
	}
	wg.Wait()
	var failed []error
	for _, e := range errsOut {
		if e != nil {
			failed = append(failed, e)
		}
	}
	return failed
}

// Unlock releases the hold that returned ctx on every member in parallel.
// It returns nil when a quorum of members released (the failed ones are
// added as events to ctx's span, if any), and otherwise an error naming
// the failed members; a multi-lock needs every member. Other return values
// as lock.Mutex.Unlock's.
func (l *Lock) Unlock(ctx context.Context) error {
	if err := l.check("unlock", ctx); err != nil {
		return err
	}
	return l.wrap("unlock", hold.End(ctx, l.key()))
}

func (l *Lock) release(ctx context.Context, h *hold.Hold) error {
	h.Lease.Stop()
	failed := l.releaseAll(ctx, h.Owner, l.cfg.UnlockTimeout)
	span := trace.SpanFromContext(ctx)
	for _, f := range failed {
		span.AddEvent("release failed", trace.WithAttributes(attribute.String("member", f.Error())))
	}
	if len(l.nodes)-len(failed) >= l.quorum {
		return nil
	}
	return fmt.Errorf("released %d of %d members, quorum %d: %w", len(l.nodes)-len(failed), len(l.nodes), l.quorum, errors.Join(failed...))
}
