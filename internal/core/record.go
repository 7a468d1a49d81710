package core

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/relock-go/relock/internal/errs"
	"github.com/relock-go/relock/internal/telemetry"
	"github.com/relock-go/relock/tracing"
)

// Trace is how an acquisition is traced and measured: the span Acquire
// wraps around the loop, and the metrics of its outcome.
type Trace struct {
	Tracer trace.Tracer
	Name   string // the span's
	// Start is made once per primitive (telemetry.Instruments.SpanStart):
	// the span kind and the attributes a sampler may look at.
	Start []trace.SpanStartOption
	// Lease and Attrs are set only on a recording span.
	Lease   time.Duration
	Attrs   []attribute.KeyValue
	Metrics *telemetry.Recorder // the acquire's duration and outcome (nil: none)
}

// Begin opens an acquisition's span, returning its context and the Record
// of its end; the caller ends the span (Acquire, the Redlock's wait).
func (tr *Trace) Begin(ctx context.Context, owner string, once bool, wait time.Duration) (context.Context, Record) {
	ctx, span := tr.Tracer.Start(ctx, tr.Name, tr.Start...)
	r := Record{Span: span, Recording: span.IsRecording(), Metrics: tr.Metrics, Once: once, Wait: wait}
	r.Measured = tr.Metrics.AcquireEnabled(ctx)
	if r.Recording {
		span.SetAttributes(tracing.Owner.String(owner), tracing.LeaseMillis.Int64(tr.Lease.Milliseconds()))
		span.SetAttributes(tr.Attrs...)
	}
	return ctx, r
}

// Record is how an acquisition's end is recorded, on its span (when
// Recording) and metrics (when Measured), the same for every primitive.
type Record struct {
	Span      trace.Span
	Recording bool
	Metrics   *telemetry.Recorder
	Measured  bool
	Once      bool          // a TryLock: one attempt
	Wait      time.Duration // the wait bound (0: none)
}

// End records an acquisition that ended with err (nil: acquired) after
// attempts tries and elapsed. An err that is the acquiring ctx's cause is
// a cancellation, or a timeout when its deadline passed.
func (r Record) End(ctx context.Context, err error, attempts int, elapsed time.Duration) {
	if !r.Recording && !r.Measured {
		return
	}
	outcome, metric := tracing.OutcomeAcquired, telemetry.Acquired
	switch {
	case err == nil:
	case ctx.Err() != nil && errors.Is(err, context.Cause(ctx)):
		// Before ErrNotAcquired, which a wait the caller ended matches too.
		outcome, metric = tracing.OutcomeCancelled, telemetry.Cancelled
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			metric = telemetry.Timeout
		}
	case errors.Is(err, errs.ErrNotAcquired):
		outcome, metric = tracing.OutcomeNotAcquired, telemetry.NotAcquired
		if errors.Is(err, errs.ErrNotReplicated) {
			metric = telemetry.NotReplicated // the reason the wait ended, if it did
		} else if !r.Once && r.Wait > 0 && elapsed >= r.Wait {
			metric = telemetry.Timeout // the wait bound passed
		}
	default:
		outcome, metric = tracing.OutcomeError, telemetry.Error
		if r.Recording {
			r.Span.RecordError(err)
			r.Span.SetStatus(codes.Error, err.Error())
		}
	}
	if r.Measured {
		r.Metrics.Acquire(ctx, metric, elapsed)
	}
	if r.Recording {
		r.Span.SetAttributes(
			tracing.Outcome.String(outcome),
			tracing.Attempts.Int(attempts),
			tracing.WaitMillis.Float64(float64(elapsed.Microseconds())/1000),
			tracing.Try.Bool(r.Once),
		)
	}
}
