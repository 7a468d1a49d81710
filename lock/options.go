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
// package's options satisfy it: another package's does not compile here.
type Option interface{ newOption() core.Option }

// LockOption configures one acquisition (Lock, TryLock) over New's
// options. Those that configure the Mutex itself (providers, watchdog,
// unlock timeout, replica sync) are not LockOptions.
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
// the acquire's context then ends with ErrLockLost. d is from 30 ms to 24 h
// (no key may outlive its last use by a day); else ErrInvalidArgument.
func WithLeaseTime(d time.Duration) CommonOption { return common(core.WithLeaseTime(d)) }

// WithWatchdogTimeout sets the lease the watchdog keeps renewing (default
// 30 s, renewed every third of it): how long a crashed holder blocks
// others. d is from 30 ms to 24 h.
func WithWatchdogTimeout(d time.Duration) CommonOption { return common(core.WithWatchdogTimeout(d)) }

// WithWaitTimeout bounds how long Lock waits (ErrNotAcquired after d), not
// the hold. The first try is made whatever d is, bounded by ctx and the
// client's timeouts; a BUSY or LOADING reply is retried only until d.
func WithWaitTimeout(d time.Duration) CommonOption { return common(core.WithWaitTimeout(d)) }

// WithUnlockTimeout bounds Unlock, which runs on its own timeout because
// its context may be done (default 5 s). d is at most 12 h; a retried
// unlock's latch key lives three times the timeout.
func WithUnlockTimeout(d time.Duration) Option { return newOnly(core.WithUnlockTimeout(d)) }

// WithTracerProvider sets where acquire spans go (default: the global
// OpenTelemetry provider).
func WithTracerProvider(tp trace.TracerProvider) Option {
	return newOnly(core.WithTracerProvider(tp))
}

// WithMeterProvider sets where metrics go (default: the global
// OpenTelemetry provider); package tracing names the instruments. The
// watchdog's own metrics are set with watchdog.WithMeterProvider.
func WithMeterProvider(mp metric.MeterProvider) Option { return newOnly(core.WithMeterProvider(mp)) }

// WithNameInMetrics adds the lock name (lock.name) to this primitive's
// metrics. Off by default: each name is a time series of its own, without
// bound where names carry ids ("order:1234"); use it for a few names only.
func WithNameInMetrics() Option { return newOnly(core.WithNameInMetrics()) }

// WithHoldScopedToContext ends a hold when the context given to Lock ends,
// as database/sql's BeginTx does: renewal stops and the hold is released in
// the background. Without it, that context bounds the wait only.
func WithHoldScopedToContext() CommonOption { return common(core.WithHoldScopedToContext()) }

// WithLogger sends warnings about a server that undermines a guarantee
// (an eviction policy) to l, not slog.Default(), once per server and reason.
func WithLogger(l *slog.Logger) CommonOption { return common(core.WithLogger(l)) }

// WithHolderLabel names the holder (a pod, a job id) in a key beside the
// hold, with its lease (relock_holder:{<name>}:<owner>), at a round trip
// each at acquire and release: `relock ls` shows it, and a labeled
// acquisition that finds the lock held says by whom and for how long
// ("held by pod-7 for 4.2s"). At most 256 bytes, no control characters. A
// Redlock member may not have one.
func WithHolderLabel(s string) CommonOption { return common(core.WithHolderLabel(s)) }

// WithForceUnlockNotice makes a hold listen for its lock's unlock message,
// so that a ForceUnlock from another process (or `relock unlock --force`)
// ends it at once with ErrLockLost, not at its next renewal. It costs a
// subscription per held name on the client's shared pub/sub connection,
// and an HEXISTS per message. A Redlock member may not have it.
func WithForceUnlockNotice() CommonOption { return common(core.WithForceUnlockNotice()) }

// WithReplicaSync bounds how long an acquisition waits for its server's
// replicas to acknowledge it (default 1s, or half the client's read timeout
// when that is 1s or less; a timeout given must be below it; 0 turns replica
// sync off); see the package's Replicas section. Too few acks make a failed
// try (TryLock: ErrNotReplicated). Once the client has seen a replica (a
// Sentinel client from the start, a cluster client once the cluster lists
// one), a master with none online refuses acquisitions, with a warning
// logged; WithReplicaSync(0) takes availability instead. A Redlock takes it
// from each member.
func WithReplicaSync(timeout time.Duration) Option { return newOnly(core.WithReplicaSync(timeout)) }

// WithMinReplicas is how many replicas must acknowledge an acquisition
// when its server has replicas (default 1); a server with fewer online
// refuses every acquisition. Given to New; see WithReplicaSync.
func WithMinReplicas(n int) Option { return newOnly(core.WithMinReplicas(n)) }

// WithWatchdog sets the watchdog that renews leases (default:
// watchdog.Default()); tests pass one with a fake clock.
func WithWatchdog(w *watchdog.Watchdog) Option {
	return newOnly(core.WithWatchdog((*lease.Watchdog)(w)))
}
