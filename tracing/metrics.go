package tracing

import (
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// Instrument names, under "relock.". Their attributes are low-cardinality;
// the lock name (LockName) only with WithNameInMetrics, since a series per
// name grows without bound where names carry ids ("order:1234").
const (
	// MetricAcquireDuration is a histogram of how long each acquire took
	// ("s"), by Primitive, Side (rwlock) and Outcome.
	MetricAcquireDuration = "relock.acquire.duration"
	// MetricAcquisitions counts acquires ("{acquisition}"), by Primitive,
	// Side (rwlock) and Outcome.
	MetricAcquisitions = "relock.acquisitions"
	// MetricHoldDuration is a histogram of how long each hold lasted
	// ("s"), by Primitive, Side (rwlock) and HoldEnd.
	MetricHoldDuration = "relock.hold.duration"
	// MetricHeld is an up-down counter of this process's current holds
	// ("{hold}"; a re-entry counts), by Primitive and Side (rwlock).
	MetricHeld = "relock.held"
	// MetricWatchdogRenewals counts leases renewed by the watchdog
	// ("{renewal}"), by Primitive.
	MetricWatchdogRenewals = "relock.watchdog.renewals"
	// MetricWatchdogRenewalFailures counts renewals of one lease on one
	// Redis that failed ("{failure}"), by Primitive and FailureReason.
	MetricWatchdogRenewalFailures = "relock.watchdog.renewal_failures"
	// MetricWatchdogLeasesLost counts leases lost ("{lease}": key gone, not
	// renewed in time, or a fixed lease ended while held), by Primitive.
	MetricWatchdogLeasesLost = "relock.watchdog.leases_lost"
	// MetricRedlockNodesWon is a histogram of the members each Redlock or
	// multi-lock round won ("{node}"), by Primitive and QuorumReached.
	MetricRedlockNodesWon = "relock.redlock.nodes_won"
	// MetricServerWarnings counts server settings that weaken a guarantee
	// ("{warning}", once per server and reason), by WarningReason, ServerAddress.
	MetricServerWarnings = "relock.server.warnings"
)

// Attribute keys of the instruments (besides LockName, Primitive, Side
// and Outcome, shared with the spans) and of the watchdog's span.
const (
	// HoldEnd is how a hold ended: one of the End values.
	HoldEnd = attribute.Key("lock.hold.end")
	// FailureReason is why a renewal failed: one of the Reason values.
	FailureReason = attribute.Key("watchdog.failure_reason")
	// QuorumReached tells whether a Redlock round won its quorum.
	QuorumReached = attribute.Key("redlock.quorum_reached")
	// WatchdogLeases is how many lease renewals a watchdog pipeline
	// carried; WatchdogRenewed, WatchdogGone and WatchdogFailed how many of
	// those Redis renewed, found gone, or got an error or no timely reply.
	WatchdogLeases  = attribute.Key("watchdog.leases")
	WatchdogRenewed = attribute.Key("watchdog.renewed")
	WatchdogGone    = attribute.Key("watchdog.gone")
	WatchdogFailed  = attribute.Key("watchdog.failed")
	// WarningReason is what a server warning is about: a Warning value.
	WarningReason = attribute.Key("relock.warning.reason")
	// ServerAddress is the address of the Redis server a warning is about.
	ServerAddress = attribute.Key("server.address")
)

// What a server warning is about (WarningReason values).
const (
	// WarningEviction: maxmemory is set and the maxmemory-policy may
	// evict a lock's keys (allkeys-*, volatile-*: they all have a TTL).
	WarningEviction = "eviction"
)

// OutcomeTimeout is the metrics' outcome of an acquire ended by its wait
// bound or deadline (the span's OutcomeNotAcquired or OutcomeCancelled).
const OutcomeTimeout = "timeout"

// OutcomeNotReplicated is the metrics' outcome of an acquire refused with
// ErrNotReplicated (the span's OutcomeNotAcquired, with ReplicasAcked).
const OutcomeNotReplicated = "not_replicated"

// How a hold ended (HoldEnd values).
const (
	EndReleased  = "released"  // Unlock, RUnlock or Release gave it back
	EndLost      = "lost"      // its lease was lost (ErrLockLost)
	EndAbandoned = "abandoned" // its acquiring context ended; released in the background
)

// Why a renewal failed (FailureReason values).
const (
	ReasonGone    = "gone"    // the lease's key (or owner field) was gone
	ReasonTimeout = "timeout" // no reply before the renewal's deadline
	ReasonError   = "error"   // Redis or the connection returned an error
)

// Span names of releases (Unlock, RUnlock, Release, and the background
// release of an abandoned hold) and of the watchdog's renewal pipelines.
const (
	SpanReleaseLock      = "release lock"
	SpanReleaseReadLock  = "release read lock"
	SpanReleaseWriteLock = "release write lock"
	SpanReleaseSemaphore = "release semaphore"
	SpanReleaseRedlock   = "release redlock" // a Redlock or multi-lock
	SpanWatchdogRenew    = "watchdog renew"  // one renewal pipeline
)

// Meter returns the relock meter of mp, or of the global provider when mp
// is nil. The global provider's meter follows a provider set later.
func Meter(mp metric.MeterProvider) metric.Meter {
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	return mp.Meter(ScopeName, metric.WithInstrumentationVersion(Version))
}

// The election's span, attributes and instruments. Its metrics always
// carry the election's name: a service runs a handful of elections.
const (
	// SpanCampaignElection is the span of one Campaign (or campaign of
	// Run), from the call to the leadership or the failure.
	SpanCampaignElection = "campaign election"
	// ElectionValue is the value a candidate campaigned with.
	ElectionValue = attribute.Key("election.value")
	// ElectionEpoch is the epoch of the leadership won.
	ElectionEpoch = attribute.Key("election.epoch")
	// ElectionTransition is what changed: one of the Transition values.
	ElectionTransition = attribute.Key("election.transition")
	// MetricElectionLeading is an up-down counter of the leaderships this
	// process holds ("{leadership}"), by LockName: 1 on the leader.
	MetricElectionLeading = "relock.election.leading"
	// MetricElectionTransitions counts this process's leaderships won and
	// ended ("{transition}"), by LockName and ElectionTransition.
	MetricElectionTransitions = "relock.election.transitions"
)

// What ended or began a leadership (ElectionTransition values).
const (
	TransitionElected  = "elected"
	TransitionResigned = "resigned"
	TransitionLost     = "lost"
)
