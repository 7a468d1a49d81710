package election

import (
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/relock-go/relock/internal/core"
	"github.com/relock-go/relock/internal/lease"
	"github.com/relock-go/relock/lock"
	"github.com/relock-go/relock/watchdog"
)

// Option configures an Election (New). Most are the fair lock's options,
// passed on; only this package's satisfy Option.
type Option interface{ options() option }

// option is a fair lock's option and the same setting as the election
// reads it (core.Apply), so that the two cannot disagree.
type option struct {
	lock lock.Option
	core core.Option
}

func (o option) options() option { return o }

// WithWatchdogTimeout sets the leadership's lease (default 30 s), renewed every
// third of it: how long a crashed leader keeps others waiting. From 30 ms to 24 h.
func WithWatchdogTimeout(d time.Duration) Option {
	return option{lock.WithWatchdogTimeout(d), core.WithWatchdogTimeout(d)}
}

// WithLeaseTime gives every leadership a fixed lease d, not renewed: its
// context ends d after election with ErrLockLost. From 30 ms to 24 h.
func WithLeaseTime(d time.Duration) Option {
	return option{lock.WithLeaseTime(d), core.WithLeaseTime(d)}
}

// WithUnlockTimeout bounds Resign, Proclaim, Leader and record writes (default 5 s).
func WithUnlockTimeout(d time.Duration) Option {
	return option{lock.WithUnlockTimeout(d), core.WithUnlockTimeout(d)}
}

// WithReplicaSync bounds the wait for replicas to acknowledge the leader's hold
// (default 1 s; 0 turns it off; see lock.WithReplicaSync and the Limits).
func WithReplicaSync(timeout time.Duration) Option {
	return option{lock.WithReplicaSync(timeout), core.WithReplicaSync(timeout)}
}

// WithMinReplicas is how many replicas must acknowledge a leader's hold
// (default 1); see lock.WithMinReplicas.
func WithMinReplicas(n int) Option { return option{lock.WithMinReplicas(n), core.WithMinReplicas(n)} }

// WithHolderLabel names the leader (a pod, a host) in `relock ls` and
// `relock show`; a candidate in line shows by its waiter id alone.
func WithHolderLabel(s string) Option {
	return option{lock.WithHolderLabel(s), core.WithHolderLabel(s)}
}

// WithTracerProvider sets where campaign spans (and the fair lock's) go
// (default: the global provider).
func WithTracerProvider(tp trace.TracerProvider) Option {
	return option{lock.WithTracerProvider(tp), core.WithTracerProvider(tp)}
}

// WithMeterProvider sets where election metrics (and the fair lock's) go
// (default: the global provider).
func WithMeterProvider(mp metric.MeterProvider) Option {
	return option{lock.WithMeterProvider(mp), core.WithMeterProvider(mp)}
}

// WithLogger sends the warnings (a server that undermines a guarantee, a
// Run that cannot resign or campaign) to l instead of slog.Default().
func WithLogger(l *slog.Logger) Option {
	return option{lock.WithLogger(l), core.WithLogger(l)}
}

// WithWatchdog sets the watchdog that renews the leadership (default watchdog.Default()).
func WithWatchdog(w *watchdog.Watchdog) Option {
	return option{lock.WithWatchdog(w), core.WithWatchdog((*lease.Watchdog)(w))}
}
