package acquire

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/relock-go/relock/internal/errs"
	"github.com/relock-go/relock/internal/notify"
	"github.com/relock-go/relock/tracing"
)

// Result is what one try returned.
type Result struct {
	// Acquired: the try took (or re-entered) the lock.
	Acquired bool
	// TTL is how long the current hold may last (PTTL of the key) when the
	// try failed: the waiter's fallback timer if no unlock message comes.
	// Negative means unknown.
	TTL time.Duration
}

// Request describes one acquire.
type Request struct {
	Tracer   trace.Tracer
	SpanName string
	// Start is made once per primitive by SpanStart: the span kind and
	// the attributes a sampler may look at.
	Start []trace.SpanStartOption
	// Owner, Lease and Attrs are set on the span only when it records, so
	// that an acquire without tracing builds none of them.
	Owner string
	Lease time.Duration
	Attrs []attribute.KeyValue

	Hub     *notify.Hub
	Channel string
	// Shared waiters (readers) are woken together.
	Shared bool
	// Direct skips the local queue: the owner already holds the lock (a
	// reentrant acquire must not queue behind those waiting for it).
	Direct bool
	// Once makes a single attempt (TryLock): contention is ErrNotAcquired.
	Once bool
	// Wait bounds the wait alone (0: only ctx bounds it).
	Wait time.Duration
	// Hold is the lease the try writes: the fallback timer of the next
	// local waiter after this one acquires.
	Hold time.Duration
	// PassOn: the primitive admits several holders (a semaphore), so after
	// this waiter acquires, the next local waiter tries at once instead of
	// waiting for a release.
	PassOn bool

	// Try makes one attempt. ctx carries the span. Attempt does the same
	// as one object, for callers that keep their state in one (a single
	// allocation per acquire instead of a closure and its variables).
	Try     func(ctx context.Context) (Result, error)
	Attempt Attempt

	// HandOff, when set, lets a local release hand the lock to this
	// waiter: the hub's claim is the HandOff itself (see
	// notify.Hub.Reserve).
	HandOff HandOff
}

// Attempt makes one attempt, as Request.Try.
type Attempt interface {
	Try(ctx context.Context) (Result, error)
}

// HandOff receives a lock handed over by a local release: Granted takes
// what the release's script returned; Discard gives back one that came as
// the waiter gave up.
type HandOff interface {
	Granted(g any)
	Discard(g any)
}

// SpanStart returns the start options of a primitive's acquire spans:
// client kind and the attributes that never change (name, primitive).
func SpanStart(attrs ...attribute.KeyValue) []trace.SpanStartOption {
	return []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...)}
}

// Do runs the loop in one span. It returns nil when acquired,
// ErrNotAcquired on contention (Once) or when Wait passed, the context's
// cause when ctx ended, or the error of a try.
func Do(ctx context.Context, req Request) error {
	ctx, span := req.Tracer.Start(ctx, req.SpanName, req.Start...)
	defer span.End()
	if !span.IsRecording() {
		_, err := loop(ctx, &req)
		return err
	}
	span.SetAttributes(tracing.Owner.String(req.Owner), tracing.LeaseMillis.Int64(req.Lease.Milliseconds()))
	span.SetAttributes(req.Attrs...)
	start := time.Now()
	attempts, err := loop(ctx, &req)
	outcome := tracing.OutcomeAcquired
	switch {
	case err == nil:
	case errors.Is(err, errs.ErrNotAcquired):
		outcome = tracing.OutcomeNotAcquired
	case ctx.Err() != nil && errors.Is(err, context.Cause(ctx)):
		outcome = tracing.OutcomeCancelled
	default:
		outcome = tracing.OutcomeError
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.SetAttributes(
		tracing.Outcome.String(outcome),
		tracing.Attempts.Int(attempts),
		tracing.WaitMillis.Float64(float64(time.Since(start).Microseconds())/1000),
		tracing.Try.Bool(req.Once),
	)
	return err
}

var errWaitTimeout = errors.New("wait timeout")

type queuedKey struct{}

// Queued reports whether the try that got ctx runs at the head of the
// local queue. Only such a try may mark its waiter in Redis (a writer
// holding back readers, a semaphore waiter taking its turn): a try made
// before queueing could mark a goroutine that then lands behind another
// local waiter, and the two would wait for each other.
func Queued(ctx context.Context) bool {
	q, _ := ctx.Value(queuedKey{}).(bool)
	return q
}

func loop(ctx context.Context, req *Request) (attempts int, err error) {
	try := req.Try
	if try == nil {
		try = req.Attempt.Try
	}
	if req.Wait > 0 && !req.Once {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, req.Wait, errWaitTimeout)
		defer cancel()
	}
	done := func() error {
		if cause := context.Cause(ctx); errors.Is(cause, errWaitTimeout) {
			return errs.ErrNotAcquired
		} else if cause != nil {
			return cause
		}
		return nil
	}
	if err := done(); err != nil {
		return 0, err
	}

	var res Result
	tried := false
	if req.Once || req.Direct || !req.Hub.Waiting(req.Channel) {
		attempts++
		res, err = try(ctx)
		if err != nil {
			// As after every try: an error caused by the end of ctx is
			// that end (the wait bound, the caller's cause).
			if d := done(); d != nil {
				return attempts, d
			}
			return attempts, err
		}
		if res.Acquired {
			return attempts, nil
		}
		if req.Once {
			return attempts, errs.ErrNotAcquired
		}
		tried = true
	}

	w, err := req.Hub.Join(ctx, req.Channel, req.Shared)
	if err != nil {
		if d := done(); d != nil {
			return attempts, d
		}
		return attempts, err
	}
	acquired := false
	defer func() {
		if req.HandOff == nil {
			w.Leave(acquired && !req.PassOn, req.Hold)
			return
		}
		if given, handed := w.Quit(acquired && !req.PassOn, req.Hold); handed && !acquired {
			req.HandOff.Discard(given) // after leaving: the lock may pass to the next
		}
	}()
	if req.HandOff != nil {
		w.Claim(req.HandOff)
	}

	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	// Subscribed: the head tries again at once, since the lock may have
	// been freed between the first try and the subscription.
	tryNow := w.Head()
	fallback := res.TTL
	if !tried {
		fallback = -1
	}
	queued := context.WithValue(ctx, queuedKey{}, true)
	for {
		if tryNow && req.HandOff != nil && !w.BeginTry() {
			// A release is handing the lock over: its Grant or Refuse
			// wakes this waiter; the fallback timer stays armed meanwhile.
			tryNow = false
			if fallback < 0 {
				fallback = max(req.Hold, time.Second)
			}
		}
		if tryNow {
			attempts++
			res, err = try(queued)
			if req.HandOff != nil {
				w.EndTry()
			}
			if err != nil {
				if d := done(); d != nil {
					return attempts, d
				}
				return attempts, err
			}
			if res.Acquired {
				acquired = true
				return attempts, nil
			}
			fallback = res.TTL
			if fallback < 0 {
				fallback = max(req.Hold, time.Second)
			}
		}
		tryNow = false
		var fire <-chan time.Time
		if w.Head() && fallback >= 0 {
			if timer == nil {
				timer = time.NewTimer(fallback)
			} else {
				timer.Reset(fallback)
			}
			fire = timer.C
		}
		select {
		case <-w.Wake():
			if req.HandOff != nil {
				if g, ok := w.Granted(); ok {
					attempts++
					req.HandOff.Granted(g)
					acquired = true
					return attempts, nil
				}
			}
			kick, hint := w.Take()
			switch {
			case kick:
				tryNow = true
			case hint > 0:
				fallback = hint // promoted behind a local holder: wait for it
			}
		case <-fire:
			tryNow = true
		case <-ctx.Done():
			return attempts, done()
		}
		if tryNow && !w.Head() {
			tryNow = false
		}
	}
}
