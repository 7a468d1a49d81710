package core

import (
	"fmt"
	"log/slog"
	"strings"
	"time"
	"unicode"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/relock-go/relock/internal/conn"
	"github.com/relock-go/relock/internal/lease"
	"github.com/relock-go/relock/internal/scripts"
	"github.com/relock-go/relock/internal/telemetry"
)

// Defaults, as Redisson's.
const (
	DefaultWatchdogTimeout = 30 * time.Second
	DefaultUnlockTimeout   = 5 * time.Second
	DefaultReplicaSync     = time.Second // bounds an acquisition's WAIT for replicas
)

// Config is what the options set.
type Config struct {
	LeaseTime       time.Duration // > 0: fixed lease, no renewal
	WatchdogTimeout time.Duration
	WaitTimeout     time.Duration
	UnlockTimeout   time.Duration
	TracerProvider  trace.TracerProvider
	MeterProvider   metric.MeterProvider
	// NameInMetrics puts the lock name on the primitive's metrics.
	NameInMetrics bool
	// ScopedHold ends a hold with its acquiring context.
	ScopedHold bool
	// HolderLabel names the holder (a pod, a host, a job) next to its hold.
	HolderLabel string
	// ForceUnlockNotice: a hold listens for its lock's unlock message.
	ForceUnlockNotice bool
	// RecordedSize: a semaphore uses the size Redis records over its own.
	RecordedSize bool
	Watchdog     *lease.Watchdog
	// ReplicaSync bounds the WAIT after an acquisition on a server with
	// replicas (0: no WAIT); MinReplicas must acknowledge.
	ReplicaSync time.Duration
	MinReplicas int
	// Redlock: per-node timeout (default lease/10) and clock drift
	// allowance (default lease/100 + 2 ms).
	NodeTimeout time.Duration
	Drift       time.Duration // < 0: the default
	// Logger gets warnings of a server undermining a guarantee (nil: slog.Default()).
	Logger *slog.Logger

	// Given is what the options set explicitly of Shared (see Adopt).
	Given Shared

	// Invalid says why the first invalid option is bad ("": all are good).
	Invalid string

	latchArg any // LatchLife(UnlockTimeout), boxed once
	// replicaGiven: WithReplicaSync or WithMinReplicas was given;
	// syncGiven: WithReplicaSync was (its timeout is the caller's).
	replicaGiven, syncGiven bool
	// newOnly names the first option given that only New takes.
	newOnly string
}

func (c *Config) onlyNew(option string) {
	if c.newOnly == "" {
		c.newOnly = option
	}
}

// PerCall returns one acquisition's configuration, c with opts applied (c
// itself without opts), or why they are refused: an invalid value, an
// option primitive does not keep (Unsupported), or one only New takes,
// which the public option types refuse at compile time already.
func (c *Config) PerCall(primitive string, opts []Option) (*Config, string) {
	if len(opts) == 0 {
		return c, c.Unsupported(primitive)
	}
	call := *c
	call.Invalid, call.newOnly, call.Given = "", "", Shared{}
	for _, o := range opts {
		if o != nil {
			o(&call)
		}
	}
	switch {
	case call.Invalid != "":
		return nil, call.Invalid
	case call.newOnly != "":
		return nil, call.newOnly + " configures the primitive (its New), not one acquisition"
	}
	if call.Given.WatchdogTimeout != 0 && call.Given.LeaseTime == 0 {
		call.LeaseTime = 0 // a renewed lease for this call, whatever New set
	}
	call.Given = c.Given
	return &call, call.Unsupported(primitive)
}

// Shared are the settings a Redlock and its members must agree on (lease
// and whether it is renewed, unlock timeout, watchdog); zero: not given.
type Shared struct {
	LeaseTime, WatchdogTimeout, UnlockTimeout time.Duration
	Watchdog                                  *lease.Watchdog
}

// Adopt takes into c what a member gave explicitly and c did not, and
// returns why the two conflict ("" when they do not).
func (c *Config) Adopt(m Shared) string {
	g := &c.Given
	leaseOf := func(s Shared) string {
		if s.LeaseTime > 0 {
			return fmt.Sprintf("lease time %v", s.LeaseTime)
		}
		return fmt.Sprintf("watchdog timeout %v", s.WatchdogTimeout)
	}
	if m.LeaseTime > 0 || m.WatchdogTimeout > 0 {
		switch {
		case g.LeaseTime == 0 && g.WatchdogTimeout == 0:
			g.LeaseTime, g.WatchdogTimeout = m.LeaseTime, m.WatchdogTimeout
			c.LeaseTime = m.LeaseTime
			if m.WatchdogTimeout > 0 {
				c.WatchdogTimeout = m.WatchdogTimeout
			}
		case g.LeaseTime != m.LeaseTime || (m.WatchdogTimeout > 0 && g.WatchdogTimeout != m.WatchdogTimeout):
			return fmt.Sprintf("%s differs from the %s given to the Redlock or an earlier member", leaseOf(m), leaseOf(*g))
		}
	}
	if m.UnlockTimeout > 0 && !adopt(&g.UnlockTimeout, &c.UnlockTimeout, m.UnlockTimeout) {
		return fmt.Sprintf("unlock timeout %v differs from the %v given to the Redlock or an earlier member", m.UnlockTimeout, g.UnlockTimeout)
	}
	if m.Watchdog != nil && !adopt(&g.Watchdog, &c.Watchdog, m.Watchdog) {
		return "its watchdog differs from the one given to the Redlock or an earlier member"
	}
	return ""
}

// adopt sets *given and *set to m when nothing was given, and reports
// whether what is given is m.
func adopt[T comparable](given, set *T, m T) bool {
	var zero T
	if *given == zero {
		*given, *set = m, m
	}
	return *given == m
}

// Option configures a primitive.
type Option func(*Config)

// Apply returns the configuration of opts over the defaults.
func Apply(opts []Option) Config {
	c := Config{WatchdogTimeout: DefaultWatchdogTimeout, UnlockTimeout: DefaultUnlockTimeout, Drift: -1,
		ReplicaSync: DefaultReplicaSync, MinReplicas: 1}
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	if c.Watchdog == nil {
		c.Watchdog = lease.Default()
	}
	c.latchArg = LatchLife(c.UnlockTimeout)
	return c
}

// LatchArg is LatchLife(timeout) as a script argument, boxed once for the
// configured unlock timeout (a Redlock's member may pass another).
func (c *Config) LatchArg(timeout time.Duration) any {
	if timeout == c.UnlockTimeout && c.latchArg != nil {
		return c.latchArg
	}
	return LatchLife(timeout)
}

// Lease is the TTL an acquire writes.
func (c *Config) Lease() time.Duration {
	if c.LeaseTime > 0 {
		return c.LeaseTime
	}
	return c.WatchdogTimeout
}

// Renewed reports whether the watchdog renews the lease.
func (c *Config) Renewed() bool { return c.LeaseTime <= 0 }

func (c *Config) invalid(format string, args ...any) {
	if c.Invalid == "" {
		c.Invalid = fmt.Sprintf(format, args...)
	}
}

// MinLease is the shortest lease accepted (lease.MinLease).
const MinLease = lease.MinLease

// MaxLease is the longest lease, watchdog timeout or extension accepted: a
// crashed holder's keys stay for a lease, and must be gone within a day.
const MaxLease = 24 * time.Hour

// MaxUnlockTimeout is the longest unlock (or node) timeout accepted: it
// keeps an unlock latch (LatchLife, three times it) within MaxLease.
const MaxUnlockTimeout = MaxLease / 3

// Check returns why a primitive called name (noun: "lock", "semaphore")
// cannot be made on client with this configuration, or "" when it can.
func (c *Config) Check(client conn.Client, noun, name string) string {
	if reason := client.Invalid(); reason != "" {
		return reason
	}
	if name == "" {
		return "empty " + noun + " name"
	}
	if reason := scripts.CheckName(name); reason != "" {
		return reason
	}
	if c.Invalid != "" {
		return c.Invalid
	}
	return c.checkReadTimeout(client)
}

// LatchLife is how long (ms) the latch of a call retried with timeout lives:
// thrice timeout, outliving the retries (twice: scripts.Call.Retrying).
func LatchLife(timeout time.Duration) int64 { return 3 * timeout.Milliseconds() }

// inRange reports whether d, the option what, is accepted, else records
// why not: a lease within [MinLease, MaxLease]; with latch (whose latch
// lives thrice d), a timeout within [MinUnlockTimeout, MaxUnlockTimeout].
func (c *Config) inRange(what string, d time.Duration, latch string) bool {
	lo, hi := MinLease, MaxLease
	if latch != "" {
		lo, hi = MinUnlockTimeout, MaxUnlockTimeout
	}
	switch {
	case d < lo:
		c.invalid("%s %v must be at least %v", what, d, lo)
	case d > hi && latch == "":
		c.invalid("%s %v must be at most %v (keys outlive a crashed holder by its lease)", what, d, hi)
	case d > hi:
		c.invalid("%s %v must be at most %v (%s lives three times as long, within %v)", what, d, hi, latch, MaxLease)
	}
	return lo <= d && d <= hi
}

// WithLeaseTime: see lock.WithLeaseTime.
func WithLeaseTime(d time.Duration) Option {
	return func(c *Config) {
		if c.inRange("lease time", d, "") {
			c.LeaseTime, c.Given.LeaseTime = d, d
		}
	}
}

// WithWatchdogTimeout: see lock.WithWatchdogTimeout.
func WithWatchdogTimeout(d time.Duration) Option {
	return func(c *Config) {
		if c.inRange("watchdog timeout", d, "") {
			c.WatchdogTimeout, c.Given.WatchdogTimeout = d, d
		}
	}
}

// WithWaitTimeout: see lock.WithWaitTimeout.
func WithWaitTimeout(d time.Duration) Option {
	return func(c *Config) {
		if d <= 0 {
			c.invalid("wait timeout %v must be positive", d)
			return
		}
		c.WaitTimeout = d
	}
}

// MinUnlockTimeout is the shortest unlock (or node) timeout accepted: under
// it a latch would live 0 ms, which Redis refuses (SET ... PX 0) only
// after the release script has written.
const MinUnlockTimeout = time.Millisecond

// WithUnlockTimeout: see lock.WithUnlockTimeout.
func WithUnlockTimeout(d time.Duration) Option {
	return func(c *Config) {
		if c.inRange("unlock timeout", d, "its latch") {
			c.onlyNew("WithUnlockTimeout")
			c.UnlockTimeout, c.Given.UnlockTimeout = d, d
		}
	}
}

// WithTracerProvider: see lock.WithTracerProvider.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(c *Config) { c.TracerProvider = tp; c.onlyNew("WithTracerProvider") }
}

// WithMeterProvider: see lock.WithMeterProvider.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(c *Config) { c.MeterProvider = mp; c.onlyNew("WithMeterProvider") }
}

// WithNameInMetrics: see lock.WithNameInMetrics.
func WithNameInMetrics() Option {
	return func(c *Config) { c.NameInMetrics = true; c.onlyNew("WithNameInMetrics") }
}

// WithHoldScopedToContext: see lock.WithHoldScopedToContext.
func WithHoldScopedToContext() Option {
	return func(c *Config) { c.ScopedHold = true }
}

// Unsupported is why primitive refuses an option of c it does not keep,
// rather than drop it ("" when there is none).
func (c *Config) Unsupported(primitive string) string {
	switch {
	case c.HolderLabel != "" && primitive != "lock" && primitive != "rwlock" && primitive != "semaphore":
		return "WithHolderLabel is kept for lock, rwlock and semaphore holds, not yet for " + primitive
	case c.ForceUnlockNotice && primitive != "lock":
		return "WithForceUnlockNotice is kept for lock.Mutex holds, not yet for " + primitive
	case c.replicaGiven && (primitive == "redlock" || primitive == "multilock"):
		return "replica sync is set on each member (lock.New, rwlock.New), whose server it concerns, not on the Redlock"
	}
	return ""
}

// ReplicaPolicy is how an acquisition's write is acknowledged.
func (c *Config) ReplicaPolicy() scripts.ReplicaPolicy {
	return scripts.ReplicaPolicy{Timeout: c.ReplicaSync, Min: c.MinReplicas, Logger: c.Logger}
}

// WithLogger: see lock.WithLogger.
func WithLogger(l *slog.Logger) Option {
	return func(c *Config) {
		if l == nil {
			c.invalid("nil logger")
			return
		}
		c.Logger = l
	}
}

// WithReplicaSync: see lock.WithReplicaSync.
func WithReplicaSync(timeout time.Duration) Option {
	return func(c *Config) {
		c.replicaGiven, c.syncGiven = true, true
		c.onlyNew("WithReplicaSync")
		if timeout < 0 || (timeout > 0 && timeout < time.Millisecond) {
			c.invalid("replica sync timeout %v must be 0 (off) or at least 1ms (WAIT counts milliseconds)", timeout)
			return
		}
		c.ReplicaSync = timeout.Truncate(time.Millisecond)
	}
}

// WithMinReplicas: see lock.WithMinReplicas.
func WithMinReplicas(n int) Option {
	return func(c *Config) {
		c.replicaGiven = true
		c.onlyNew("WithMinReplicas")
		if n < 1 {
			c.invalid("min replicas %d must be at least 1 (WithReplicaSync(0) turns replica sync off)", n)
			return
		}
		c.MinReplicas = n
	}
}

// checkReadTimeout says why client's read timeout would cut a WAIT of
// c.ReplicaSync short ("" when it would not). A default ReplicaSync is
// halved below the read timeout instead, unless the caller set it.
func (c *Config) checkReadTimeout(client conn.Client) string {
	rt, ok := client.ReadTimeout()
	switch {
	case c.ReplicaSync <= 0 || !ok || rt <= 0 || rt > c.ReplicaSync:
		return ""
	case !c.syncGiven:
		c.ReplicaSync = max(rt/2, time.Millisecond).Truncate(time.Millisecond)
		return ""
	}
	return fmt.Sprintf("replica sync timeout %v must be below the client's read timeout %v, which would cut the WAIT short", c.ReplicaSync, rt)
}

// WithForceUnlockNotice: see lock.WithForceUnlockNotice.
func WithForceUnlockNotice() Option {
	return func(c *Config) { c.ForceUnlockNotice = true }
}

// MaxHolderLabel bounds a holder label's length in bytes.
const MaxHolderLabel = 256

// WithHolderLabel: see lock.WithHolderLabel.
func WithHolderLabel(s string) Option {
	return func(c *Config) {
		switch {
		case s == "":
			c.invalid("holder label is empty")
		case len(s) > MaxHolderLabel:
			c.invalid("holder label is %d bytes, more than %d", len(s), MaxHolderLabel)
		case strings.ContainsFunc(s, unicode.IsControl):
			c.invalid("holder label %q holds a control character", s)
		default:
			c.HolderLabel = s
		}
	}
}

// WithRecordedSize: see semaphore.WithRecordedSize.
func WithRecordedSize() Option {
	return func(c *Config) { c.RecordedSize = true; c.onlyNew("WithRecordedSize") }
}

// WithWatchdog: see lock.WithWatchdog.
func WithWatchdog(w *lease.Watchdog) Option {
	return func(c *Config) { c.Watchdog, c.Given.Watchdog = w, w; c.onlyNew("WithWatchdog") }
}

// WithNodeTimeout: see redlock.WithNodeTimeout.
func WithNodeTimeout(d time.Duration) Option {
	return func(c *Config) {
		// A failed round gives members back with it as unlock timeout.
		if c.inRange("node timeout", d, "a give-back's latch") {
			c.NodeTimeout = d
			c.onlyNew("WithNodeTimeout")
		}
	}
}

// WithDrift: see redlock.WithDrift.
func WithDrift(d time.Duration) Option {
	return func(c *Config) {
		if d < 0 {
			c.invalid("drift %v must not be negative", d)
			return
		}
		c.Drift = d
		c.onlyNew("WithDrift")
	}
}

// Instruments makes c's tracing and metrics instruments of a primitive (or
// an rwlock side); attrs are extra attributes of its acquire spans.
func (c *Config) Instruments(primitive, side, name, releaseSpan string, attrs ...attribute.KeyValue) telemetry.Instruments {
	return telemetry.NewInstruments(telemetry.Setup{
		TracerProvider: c.TracerProvider, MeterProvider: c.MeterProvider, NameInMetrics: c.NameInMetrics,
		Primitive: primitive, Side: side, Name: name, Renewed: c.Renewed(),
		ReleaseSpan: releaseSpan, Attrs: attrs,
	})
}

// Options unwraps a package's typed options with get, skipping nil ones (the
// types make the compiler refuse another package's or a New-only option).
func Options[T any](opts []T, get func(T) Option) []Option {
	out := make([]Option, 0, len(opts))
	for _, o := range opts {
		if any(o) != nil {
			out = append(out, get(o))
		}
	}
	return out
}
