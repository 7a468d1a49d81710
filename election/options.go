package election

import (
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/relock-go/relock/lock"
	"github.com/relock-go/relock/watchdog"
)

// Option configures an Election (New). Most are the fair lock's options,
// passed on; only this package's satisfy Option.
type Option interface{ apply(*config) }

type config struct {
	lock          []lock.Option
	lease         time.Duration // the leadership's lease
	fixed         bool          // WithLeaseTime: not renewed
	unlockTimeout time.Duration
	tp            trace.TracerProvider
	mp            metric.MeterProvider
	logger        *slog.Logger
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

func lockOption(o lock.Option, f func(*config)) Option {
	return optionFunc(func(c *config) {
		c.lock = append(c.lock, o)
		if f != nil {
			f(c)
		}
	})
}

func newConfig(opts []Option) config {
	c := config{lease: 30 * time.Second, unlockTimeout: 5 * time.Second}
	for _, o := range opts {
		if o != nil {
			o.apply(&c)
		}
	}
	return c
}

// WithWatchdogTimeout sets the leadership's lease (default 30 s), renewed every
// third of it: how long a crashed leader keeps others waiting. From 30 ms to 24 h.
func WithWatchdogTimeout(d time.Duration) Option {
	return lockOption(lock.WithWatchdogTimeout(d), func(c *config) { c.lease, c.fixed = d, false })
}

// WithLeaseTime gives every leadership a fixed lease d, not renewed: its
// context ends d after election with ErrLockLost. From 30 ms to 24 h.
func WithLeaseTime(d time.Duration) Option {
	return lockOption(lock.WithLeaseTime(d), func(c *config) { c.lease, c.fixed = d, true })
}

// WithUnlockTimeout bounds Resign, Proclaim, Leader and record writes (default 5 s).
func WithUnlockTimeout(d time.Duration) Option {
	return lockOption(lock.WithUnlockTimeout(d), func(c *config) { c.unlockTimeout = d })
}

// WithReplicaSync bounds the wait for replicas to acknowledge the leader's hold
// (default 1 s; 0 turns it off; see lock.WithReplicaSync and the Limits).
func WithReplicaSync(timeout time.Duration) Option {
	return lockOption(lock.WithReplicaSync(timeout), nil)
}

// WithMinReplicas is how many replicas must acknowledge a leader's hold
// (default 1); see lock.WithMinReplicas.
func WithMinReplicas(n int) Option { return lockOption(lock.WithMinReplicas(n), nil) }

// WithHolderLabel names the leader (a pod, a host) in `relock ls` and
// `relock show`; a candidate in line shows by its waiter id alone.
func WithHolderLabel(s string) Option { return lockOption(lock.WithHolderLabel(s), nil) }

// WithTracerProvider sets where campaign spans (and the fair lock's) go
// (default: the global provider).
func WithTracerProvider(tp trace.TracerProvider) Option {
	return lockOption(lock.WithTracerProvider(tp), func(c *config) { c.tp = tp })
}

// WithMeterProvider sets where election metrics (and the fair lock's) go
// (default: the global provider).
func WithMeterProvider(mp metric.MeterProvider) Option {
	return lockOption(lock.WithMeterProvider(mp), func(c *config) { c.mp = mp })
}

// WithLogger sends the warnings (a server that undermines a guarantee, a
// Run that cannot resign or campaign) to l instead of slog.Default().
func WithLogger(l *slog.Logger) Option {
	return lockOption(lock.WithLogger(l), func(c *config) { c.logger = l })
}

// WithWatchdog sets the watchdog that renews the leadership (default watchdog.Default()).
func WithWatchdog(w *watchdog.Watchdog) Option { return lockOption(lock.WithWatchdog(w), nil) }
