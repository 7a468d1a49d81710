package telemetry

import (
	"cmp"
	"context"
	"reflect"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/relock-go/relock/tracing"
)

// Bucket boundaries (seconds) of the wait histogram: 0.5 ms up to a minute.
var waitBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}

// Bucket boundaries (seconds) of the hold histogram: 1 ms to an hour.
var holdBuckets = []float64{0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 3600}

// Bucket boundaries of the nodes-won histogram: one bucket per count.
var nodeBuckets = []float64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10}

// Outcome is an acquire's outcome, an index into the tracing.Outcome values.
type Outcome int

// The outcomes of an acquire.
const (
	Acquired Outcome = iota
	NotAcquired
	Timeout
	Cancelled
	Error
	NotReplicated
	nOutcomes
)

var outcomeNames = [nOutcomes]string{
	tracing.OutcomeAcquired, tracing.OutcomeNotAcquired, tracing.OutcomeTimeout,
	tracing.OutcomeCancelled, tracing.OutcomeError, tracing.OutcomeNotReplicated,
}

// String is the outcome's attribute value.
func (o Outcome) String() string { return outcomeNames[o] }

// End is how a hold ended.
type End int

// How a hold ends.
const (
	Released End = iota
	Lost
	Abandoned
	nEnds
)

var endNames = [nEnds]string{tracing.EndReleased, tracing.EndLost, tracing.EndAbandoned}

// Reason is why a renewal failed.
type Reason int

// Why a renewal failed.
const (
	Gone Reason = iota
	ReplyTimeout
	Failed
	nReasons
)

var reasonNames = [nReasons]string{tracing.ReasonGone, tracing.ReasonTimeout, tracing.ReasonError}

type instruments struct {
	acquireDur   metric.Float64Histogram
	acquisitions metric.Int64Counter
	holdDur      metric.Float64Histogram
	held         metric.Int64UpDownCounter
	nodesWon     metric.Int64Histogram
	renewals     metric.Int64Counter
	failures     metric.Int64Counter
	leasesLost   metric.Int64Counter
}

func newInstruments(mp metric.MeterProvider) *instruments {
	m := tracing.Meter(mp)
	in := &instruments{}
	// On error (a conflicting registration) the API still returns a working no-op instrument.
	var errs [8]error
	in.acquireDur, errs[0] = m.Float64Histogram(tracing.MetricAcquireDuration, metric.WithUnit("s"),
		metric.WithDescription("How long acquires took, waiting included."),
		metric.WithExplicitBucketBoundaries(waitBuckets...))
	in.acquisitions, errs[1] = m.Int64Counter(tracing.MetricAcquisitions, metric.WithUnit("{acquisition}"),
		metric.WithDescription("Acquires, by outcome."))
	in.holdDur, errs[2] = m.Float64Histogram(tracing.MetricHoldDuration, metric.WithUnit("s"),
		metric.WithDescription("How long holds lasted, by how they ended."),
		metric.WithExplicitBucketBoundaries(holdBuckets...))
	in.held, errs[3] = m.Int64UpDownCounter(tracing.MetricHeld, metric.WithUnit("{hold}"),
		metric.WithDescription("Holds currently held by this process (a re-entry counts)."))
	in.nodesWon, errs[4] = m.Int64Histogram(tracing.MetricRedlockNodesWon, metric.WithUnit("{node}"),
		metric.WithDescription("Members won by each round of a Redlock acquire."),
		metric.WithExplicitBucketBoundaries(nodeBuckets...))
	in.renewals, errs[5] = m.Int64Counter(tracing.MetricWatchdogRenewals, metric.WithUnit("{renewal}"),
		metric.WithDescription("Leases renewed by the watchdog."))
	in.failures, errs[6] = m.Int64Counter(tracing.MetricWatchdogRenewalFailures, metric.WithUnit("{failure}"),
		metric.WithDescription("Renewals of a lease on one Redis that failed, by reason."))
	in.leasesLost, errs[7] = m.Int64Counter(tracing.MetricWatchdogLeasesLost, metric.WithUnit("{lease}"),
		metric.WithDescription("Leases declared lost."))
	if err := cmp.Or(errs[:]...); err != nil { // the first
		otel.Handle(err)
	}
	return in
}

// byProvider caches each comparable MeterProvider's instruments, shared by
// primitives made per request: the global meter keeps every one made forever.
var byProvider sync.Map // metric.MeterProvider -> *instruments

func instrumentsOf(mp metric.MeterProvider) *instruments {
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	if !reflect.TypeOf(mp).Comparable() {
		return newInstruments(mp)
	}
	if in, ok := byProvider.Load(mp); ok {
		return in.(*instruments)
	}
	in, _ := byProvider.LoadOrStore(mp, newInstruments(mp))
	return in.(*instruments)
}

// Recorder records a primitive's (and side's) measurements, its attribute sets made once.
type Recorder struct {
	in      *instruments
	acqAdd  [nOutcomes][]metric.AddOption
	acqRec  [nOutcomes][]metric.RecordOption
	holdRec [nEnds][]metric.RecordOption
	heldAdd []metric.AddOption
	won     [2][]metric.RecordOption // by quorum reached
}

type recorderKey struct {
	mp              metric.MeterProvider
	primitive, side string
}

// recorders caches the Recorders made without the lock name.
var recorders sync.Map // recorderKey -> *Recorder

// For returns the shared Recorder of primitive and side ("" but for an rwlock)
// on mp (nil: global), or with withName a Recorder of its own naming name.
func For(mp metric.MeterProvider, primitive, side, name string, withName bool) *Recorder {
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	if withName || !reflect.TypeOf(mp).Comparable() {
		return newRecorder(mp, primitive, side, name, withName)
	}
	k := recorderKey{mp, primitive, side}
	if r, ok := recorders.Load(k); ok {
		return r.(*Recorder)
	}
	r, _ := recorders.LoadOrStore(k, newRecorder(mp, primitive, side, name, false))
	return r.(*Recorder)
}

func newRecorder(mp metric.MeterProvider, primitive, side, name string, withName bool) *Recorder {
	r := &Recorder{in: instrumentsOf(mp)}
	base := []attribute.KeyValue{tracing.Primitive.String(primitive)}
	if side != "" {
		base = append(base, tracing.Side.String(side))
	}
	if withName {
		base = append(base, tracing.LockName.String(name))
	}
	with := func(kv attribute.KeyValue) metric.MeasurementOption {
		s := attribute.NewSet(append(base[:len(base):len(base)], kv)...)
		return metric.WithAttributeSet(s)
	}
	for o := range nOutcomes {
		opt := with(tracing.Outcome.String(outcomeNames[o]))
		r.acqAdd[o] = []metric.AddOption{opt}
		r.acqRec[o] = []metric.RecordOption{opt}
	}
	for e := range nEnds {
		r.holdRec[e] = []metric.RecordOption{with(tracing.HoldEnd.String(endNames[e]))}
	}
	r.heldAdd = []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(base...))}
	r.won[0] = []metric.RecordOption{with(tracing.QuorumReached.Bool(false))}
	r.won[1] = []metric.RecordOption{with(tracing.QuorumReached.Bool(true))}
	return r
}

// AcquireEnabled reports whether acquires are measured (false without an SDK).
func (r *Recorder) AcquireEnabled(ctx context.Context) bool {
	return r != nil && (r.in.acquisitions.Enabled(ctx) || r.in.acquireDur.Enabled(ctx))
}

// Acquire records one acquire that took d.
func (r *Recorder) Acquire(ctx context.Context, o Outcome, d time.Duration) {
	r.in.acquireDur.Record(ctx, d.Seconds(), r.acqRec[o]...)
	r.in.acquisitions.Add(ctx, 1, r.acqAdd[o]...)
}

// HoldStart records a new hold and reports whether it did; only then call HoldEnd.
func (r *Recorder) HoldStart(ctx context.Context) bool {
	if r == nil || !(r.in.held.Enabled(ctx) || r.in.holdDur.Enabled(ctx)) {
		return false
	}
	r.in.held.Add(ctx, 1, r.heldAdd...)
	return true
}

// HoldEnd records the end of a hold that lasted d.
func (r *Recorder) HoldEnd(ctx context.Context, e End, d time.Duration) {
	r.in.held.Add(ctx, -1, r.heldAdd...)
	r.in.holdDur.Record(ctx, d.Seconds(), r.holdRec[e]...)
}

// NodesWon records a Redlock round that won won members.
func (r *Recorder) NodesWon(ctx context.Context, won int, quorum bool) {
	q := 0
	if quorum {
		q = 1
	}
	r.in.nodesWon.Record(ctx, int64(won), r.won[q]...)
}

// Release is what a primitive's (or side's) release spans need, made once.
type Release struct {
	Tracer trace.Tracer
	Name   string
	Start  []trace.SpanStartOption
	// Metrics records the hold's measurements (nil: none).
	Metrics *Recorder
}

// Watchdog records a watchdog's measurements, by primitive.
type Watchdog struct {
	in *instruments
	mu sync.Mutex
	// per primitive: renewals, leases lost, failures by reason
	byPrim map[string]*watchdogSets
}

type watchdogSets struct {
	one    []metric.AddOption
	failed [nReasons][]metric.AddOption
}

// NewWatchdog returns the recorder of a watchdog on mp (nil: global).
func NewWatchdog(mp metric.MeterProvider) *Watchdog {
	return &Watchdog{in: instrumentsOf(mp), byPrim: map[string]*watchdogSets{}}
}

func (w *Watchdog) sets(primitive string) *watchdogSets {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := w.byPrim[primitive]
	if s == nil {
		p := tracing.Primitive.String(primitive)
		s = &watchdogSets{one: []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(p))}}
		for re := range nReasons {
			s.failed[re] = []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(p, tracing.FailureReason.String(reasonNames[re])))}
		}
		w.byPrim[primitive] = s
	}
	return s
}

// Renewed counts n leases of primitive renewed.
func (w *Watchdog) Renewed(primitive string, n int64) {
	ctx := context.Background()
	if n == 0 || !w.in.renewals.Enabled(ctx) {
		return
	}
	w.in.renewals.Add(ctx, n, w.sets(primitive).one...)
}

// Failed counts n renewals of primitive that failed for reason.
func (w *Watchdog) Failed(primitive string, reason Reason, n int64) {
	ctx := context.Background()
	if n == 0 || !w.in.failures.Enabled(ctx) {
		return
	}
	w.in.failures.Add(ctx, n, w.sets(primitive).failed[reason]...)
}

// Lost counts a lease of primitive declared lost.
func (w *Watchdog) Lost(primitive string) {
	ctx := context.Background()
	if !w.in.leasesLost.Enabled(ctx) {
		return
	}
	w.in.leasesLost.Add(ctx, 1, w.sets(primitive).one...)
}
