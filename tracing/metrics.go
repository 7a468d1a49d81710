package tracing

import (
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// Instrument names, in OpenTelemetry's dotted style under "relock.". Every
// instrument's attributes are low-cardinality: the primitive, the rwlock
// side, an outcome or reason; the lock name (LockName) only when a
// primitive is made with WithNameInMetrics, since one time series per
// lock name grows without bound where names carry ids ("order:1234").
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
	// MetricHeld is an up-down counter of the holds currently held by
	// this process ("{hold}"; a re-entry is a hold of its own), by
	// Primitive and Side (rwlock).
	MetricHeld = "relock.held"
	// MetricWatchdogRenewals counts leases renewed by the watchdog
	// ("{renewal}"), by Primitive.
	MetricWatchdogRenewals = "relock.watchdog.renewals"
	// MetricWatchdogRenewalFailures counts renewals of one lease on one
	// Redis that failed ("{failure}"), by Primitive and FailureReason.
	MetricWatchdogRenewalFailures = "relock.watchdog.renewal_failures"
	// MetricWatchdogLeasesLost counts leases declared lost ("{lease}"):
	// key gone, not renewed in time, or a fixed lease that ended while
	// held; by Primitive.
	MetricWatchdogLeasesLost = "relock.watchdog.leases_lost"
	// MetricRedlockNodesWon is a histogram of the members won by each
	// round of a Redlock or multi-lock acquire ("{node}"), by Primitive
	// and QuorumReached.
	MetricRedlockNodesWon = "relock.redlock.nodes_won"
	// MetricServerWarnings counts the settings of a Redis server found to
	// weaken a guarantee ("{warning}"), once per server and reason, by
	// WarningReason and ServerAddress.
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
	// WatchdogLeases is the number of lease renewals a watchdog pipeline
	// carried.
	WatchdogLeases = attribute.Key("watchdog.leases")
	// WatchdogRenewed is the number of those that Redis renewed.
	WatchdogRenewed = attribute.Key("watchdog.renewed")
	// WatchdogGone is the number of those whose key was gone.
	WatchdogGone = attribute.Key("watchdog.gone")
	// WatchdogFailed is the number of those that got an error (or no
	// reply in time).
	WatchdogFailed = attribute.Key("watchdog.failed")
	// WarningReason is what a server warning is about: one of the
	// Warning values.
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

// OutcomeTimeout is the metrics' outcome of an acquire whose wait ended by
// its bound (WithWaitTimeout) or its context's deadline; the acquire span
// reports those as OutcomeNotAcquired and OutcomeCancelled.
const OutcomeTimeout = "timeout"

// OutcomeNotReplicated is the metrics' outcome of an acquire refused
// because too few replicas acknowledged its write (ErrNotReplicated); the
// acquire span reports it as OutcomeNotAcquired, with ReplicasAcked.
const OutcomeNotReplicated = "not_replicated"

// How a hold ended (HoldEnd values).
const (
	// EndReleased: Unlock, RUnlock or Release gave it back.
	EndReleased = "released"
	// EndLost: its lease was lost (ErrLockLost).
	EndLost = "lost"
	// EndAbandoned: its acquiring context ended first; it was released in
	// the background.
	EndAbandoned = "abandoned"
)

// Why a renewal failed (FailureReason values).
const (
	// ReasonGone: the lease's key (or owner field) was gone in Redis.
	ReasonGone = "gone"
	// ReasonTimeout: no reply before the renewal's deadline.
	ReasonTimeout = "timeout"
	// ReasonError: Redis or the connection returned an error.
	ReasonError = "error"
)

// Span names of releases (Unlock, RUnlock, Release, and the background
// release of an abandoned hold) and of the watchdog's renewal pipelines.
const (
	// SpanReleaseLock is the span of a lock.Mutex release.
	SpanReleaseLock = "release lock"
	// SpanReleaseReadLock is the span of an rwlock read-side release.
	SpanReleaseReadLock = "release read lock"
	// SpanReleaseWriteLock is the span of an rwlock write-side release.
	SpanReleaseWriteLock = "release write lock"
	// SpanReleaseSemaphore is the span of a semaphore release.
	SpanReleaseSemaphore = "release semaphore"
	// SpanReleaseRedlock is the span of a Redlock or multi-lock release.
	SpanReleaseRedlock = "release redlock"
	// SpanWatchdogRenew is the span of one renewal pipeline the watchdog
	// sends.
	SpanWatchdogRenew = "watchdog renew"
)

// Meter returns the relock meter of mp, or of the global provider when mp
// is nil. The global provider's meter follows a provider set later.
func Meter(mp metric.MeterProvider) metric.Meter {
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	return mp.Meter(ScopeName, metric.WithInstrumentationVersion(Version))
}

// The election's span, attributes and instruments. An election's name is
// on its metrics always: a service runs a handful of elections, not one
// per request, so the series stay few.
const (
	// SpanCampaignElection is the span of one Campaign (and of each
	// campaign of Run): from the call to the leadership or the failure.
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
