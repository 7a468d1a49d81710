package lock

import (
	"log/slog"
	"time"

	"github.com/relock-go/relock/internal/core"
	"github.com/relock-go/relock/internal/lease"
	"github.com/relock-go/relock/watchdog"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// Option configures a Mutex when it is made (New, NewFair). Only this
// package's options satisfy it, so an option of rwlock, semaphore or
// redlock given here does not compile.
type Option interface{ newOption() core.Option }

// LockOption configures one acquisition (Lock, TryLock) over New's
// options. The options that configure the Mutex itself (providers,
// watchdog, unlock timeout, replica sync) are not LockOptions, so giving
// one to Lock does not compile.
type LockOption interface{ lockOption() core.Option }

// CommonOption is an option given either to New or to one acquisition.
type CommonOption interface {
	Option
	LockOption
}

// newOnly is an option of New alone.
type newOnly core.Option

func (o newOnly) newOption() core.Option { return core.Option(o) }

// common is an option of New or of one acquisition.
type common core.Option

func (o common) newOption() core.Option  { return core.Option(o) }
func (o common) lockOption() core.Option { return core.Option(o) }

func newOptions(opts []Option) []core.Option { return core.Options(opts, Option.newOption) }

func lockOptions(opts []LockOption) []core.Option {
	return core.Options(opts, LockOption.lockOption)
}

// WithLeaseTime gives every hold a fixed lease d and no watchdog renewal:
// the lock frees itself d after it was taken unless unlocked sooner, and
// the context the acquire returned ends then, with ErrLockLost. d is at
// least 30 ms and at most 24 h (a crashed holder's keys stay for the
// lease, and none may outlive its last use by more than a day); outside
// that, ErrInvalidArgument.
func WithLeaseTime(d time.Duration) CommonOption { return common(core.WithLeaseTime(d)) }

// WithWatchdogTimeout sets the lease the watchdog keeps renewing (default
// 30 s, renewed every third of it): how long a crashed holder blocks others.
// As WithLeaseTime's, d is from 30 ms to 24 h.
func WithWatchdogTimeout(d time.Duration) CommonOption { return common(core.WithWatchdogTimeout(d)) }

// WithWaitTimeout bounds how long Lock waits (ErrNotAcquired after d),
// without bounding the hold. The first try is made whatever d is (a free
// lock is taken even when d is shorter than a round trip); it is bounded
// by ctx and the client's own timeouts, and a server that answers it BUSY
// or LOADING is asked again only until d.
func WithWaitTimeout(d time.Duration) CommonOption { return common(core.WithWaitTimeout(d)) }

// WithUnlockTimeout bounds Unlock, which runs on its own timeout because
// its context may already be done (default 5 s). d is at most 12 h: a
// retried unlock's latch key lives twice the timeout, within a day.
func WithUnlockTimeout(d time.Duration) Option { return newOnly(core.WithUnlockTimeout(d)) }

// WithTracerProvider sets where acquire spans go (default: the global
// OpenTelemetry provider).
func WithTracerProvider(tp trace.TracerProvider) Option {
	return newOnly(core.WithTracerProvider(tp))
}

// WithMeterProvider sets where metrics go (default: the global
// OpenTelemetry provider): acquire duration and count by outcome, hold
// duration by how the hold ended, holds currently held; see package
// tracing for the instrument names. The watchdog's own metrics (renewals,
// failures, leases lost) are set on the watchdog: watchdog.WithMeterProvider.
func WithMeterProvider(mp metric.MeterProvider) Option { return newOnly(core.WithMeterProvider(mp)) }

// WithNameInMetrics adds the lock name (attribute lock.name) to the
// metrics of this primitive. Off by default: every distinct name is a
// time series of its own in every instrument, which grows without bound
// where names carry ids ("order:1234"); turn it on only for a few
// well-known names.
func WithNameInMetrics() Option { return newOnly(core.WithNameInMetrics()) }

// WithHoldScopedToContext ends a hold when the context given to Lock
// ends, as database/sql's BeginTx ends a transaction: renewal stops and
// the hold is released in the background. Without it, that context
// bounds the wait only (as in x/sync/semaphore, etcd's concurrency.Mutex
// and redsync), and the hold lasts until Unlock, its loss, or the end of
// Do.
func WithHoldScopedToContext() CommonOption { return common(core.WithHoldScopedToContext()) }

// WithLogger sends the warnings about a server that undermines a
// guarantee (an eviction policy that can evict lock keys) to l instead of
// slog.Default(). Each is given once per server and reason in the process.
func WithLogger(l *slog.Logger) CommonOption { return common(core.WithLogger(l)) }

// WithHolderLabel names the holder (a pod, a host, a job id) next to its
// hold, in a key of its own with the hold's lease
// (relock_holder:{<name>}:<owner>; Redisson's layout is unchanged):
// `relock ls` shows it, and an acquisition with a label of its own that
// finds the lock held says by whom and for how long ("held by pod-7 for
// 4.2s"; one more round trip then). It costs a round trip when the hold
// is taken and one when it is released. At most 256 bytes, no control
// characters. It may be given to New or to one Lock; rwlock and semaphore
// have a WithHolderLabel of their own (a permit's holder is its permit
// id); a Redlock does not offer one for now.
func WithHolderLabel(s string) CommonOption { return common(core.WithHolderLabel(s)) }

// WithForceUnlockNotice makes a hold listen for its lock's unlock message
// while it lasts, so that a ForceUnlock made by another process (or
// `relock unlock --force`) ends it at once, with ErrLockLost, instead of
// at its next renewal (up to a third of the lease; a ForceUnlock made in
// this process is seen at once without it). It costs a subscription of
// the lock's channel per held name on the client's shared pub/sub
// connection, and an HEXISTS when a message comes. It may be given to New
// or to one Lock; other primitives do not offer it for now.
func WithForceUnlockNotice() CommonOption { return common(core.WithForceUnlockNotice()) }

// WithReplicaSync bounds how long an acquisition waits for the replicas
// of its server to acknowledge it (default 1s; 0 turns replica sync off).
// Where the server holding the name's slot has replicas online, the
// acquire script and WAIT <replicas> <timeout> go out in one round trip;
// if fewer than WithMinReplicas acknowledged, the acquisition is given
// back (waiters are woken) and counts as a failed try: Lock tries again
// within its wait bound, TryLock returns ErrNotReplicated (which matches
// ErrNotAcquired). A server without replicas gets no WAIT and pays
// nothing, unless the client has seen a replica of its deployment (a
// Sentinel client expects them from the start, a cluster client as soon
// as the cluster lists one): then
// a master with none online refuses the acquisition (ErrNotReplicated,
// with a warning logged) rather than write a hold a failover could
// drop; WithReplicaSync(0) takes availability instead. A synced hold's
// renewals count once a replica acknowledged them, so its holder is told
// ErrLockLost within a lease when its replicas stop acknowledging.
// Releases are not synced: after a failover a released lock may show as
// held until its lease runs out.
// The WAIT asks for WithMinReplicas of the replicas online (all of them
// when fewer are online), so it returns as soon as enough acknowledged.
// The default is shortened to half the client's read timeout when that is
// 1s or less; a timeout given here must be below it. It is given to New
// (one acquisition cannot take it); a Redlock takes it from each member.
func WithReplicaSync(timeout time.Duration) Option { return newOnly(core.WithReplicaSync(timeout)) }

// WithMinReplicas is how many replicas must acknowledge an acquisition
// when its server has replicas (default 1); a server with fewer online
// refuses every acquisition. Given to New; see WithReplicaSync.
func WithMinReplicas(n int) Option { return newOnly(core.WithMinReplicas(n)) }

// WithWatchdog sets the watchdog that renews leases (default:
// watchdog.Default(), shared by the process). Tests pass one with a fake
// clock.
func WithWatchdog(w *watchdog.Watchdog) Option {
	return newOnly(core.WithWatchdog((*lease.Watchdog)(w)))
}
