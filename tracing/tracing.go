package tracing

import (
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// ScopeName is the instrumentation scope of every relock tracer.
const ScopeName = "github.com/relock-go/relock"

// Version is the instrumentation scope version.
const Version = "0.1.0"

// Span names, one per primitive and side.
const (
	SpanAcquireLock      = "acquire lock"
	SpanAcquireReadLock  = "acquire read lock"
	SpanAcquireWriteLock = "acquire write lock"
	SpanAcquireSemaphore = "acquire semaphore"
	SpanAcquireRedlock   = "acquire redlock"
)

// Attribute keys of an acquire span.
const (
	LockName       = attribute.Key("lock.name")
	Primitive      = attribute.Key("lock.primitive") // "lock", "rwlock", ...
	Owner          = attribute.Key("lock.owner")
	Outcome        = attribute.Key("lock.outcome") // see the Outcome values
	Attempts       = attribute.Key("lock.attempts")
	WaitMillis     = attribute.Key("lock.wait_ms")
	Reentrant      = attribute.Key("lock.reentrant")
	LeaseMillis    = attribute.Key("lock.lease_ms")
	Watchdog       = attribute.Key("lock.watchdog") // lease renewed by the watchdog
	FencingToken   = attribute.Key("lock.fencing_token")
	Try            = attribute.Key("lock.try")  // one attempt (TryLock)
	Side           = attribute.Key("lock.side") // "read" or "write" (rwlock)
	Size           = attribute.Key("semaphore.size")
	Permits        = attribute.Key("semaphore.permits") // n of this acquire
	Nodes          = attribute.Key("redlock.nodes")
	Quorum         = attribute.Key("redlock.quorum")
	NodesWon       = attribute.Key("redlock.nodes_won")
	ValidityMillis = attribute.Key("redlock.validity_ms")
	// ReplicasAcked is how many replicas acknowledged the try that acquired
	// (or was undone for too few), when replica sync sent a WAIT.
	ReplicasAcked = attribute.Key("lock.replicas_acked")
)

// Outcome values.
const (
	OutcomeAcquired    = "acquired"
	OutcomeNotAcquired = "not_acquired"
	OutcomeCancelled   = "cancelled"
	OutcomeError       = "error"
)

// Tracer returns the relock tracer of tp, or of the global provider when tp
// is nil. The global provider's tracer follows a provider set later.
func Tracer(tp trace.TracerProvider) trace.Tracer {
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	return tp.Tracer(ScopeName, trace.WithInstrumentationVersion(Version))
}
