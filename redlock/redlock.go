package redlock

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/relock-go/relock"
	"github.com/relock-go/relock/internal/core"
	"github.com/relock-go/relock/internal/errs"
	"github.com/relock-go/relock/internal/lease"
	"github.com/relock-go/relock/internal/telemetry"
	"github.com/relock-go/relock/tracing"
	"github.com/relock-go/relock/watchdog"
)

// The sentinel errors, the same values in every relock package.
var (
	ErrNotAcquired     = relock.ErrNotAcquired
	ErrNotHeld         = relock.ErrNotHeld
	ErrLockLost        = relock.ErrLockLost
	ErrInvalidArgument = relock.ErrInvalidArgument
	ErrNotReplicated   = relock.ErrNotReplicated
	ErrWrongKind       = relock.ErrWrongKind
)

// Member is a lock on one Redis that a Redlock can drive: *lock.Mutex,
// or the ReadLocker or WriteLocker side of an *rwlock.RWMutex. It is
// sealed: only this module's primitives implement it.
type Member interface {
	// Name is the member lock's name.
	Name() string
	core.MemberSource
}

// WithLeaseTime: see lock.WithLeaseTime.
func WithLeaseTime(d time.Duration) CommonOption { return common(core.WithLeaseTime(d)) }

// WithWatchdogTimeout: see lock.WithWatchdogTimeout.
func WithWatchdogTimeout(d time.Duration) CommonOption { return common(core.WithWatchdogTimeout(d)) }

// WithWaitTimeout: see lock.WithWaitTimeout.
func WithWaitTimeout(d time.Duration) CommonOption { return common(core.WithWaitTimeout(d)) }

// WithUnlockTimeout: see lock.WithUnlockTimeout.
func WithUnlockTimeout(d time.Duration) Option { return newOnly(core.WithUnlockTimeout(d)) }

// WithTracerProvider: see lock.WithTracerProvider.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return newOnly(core.WithTracerProvider(tp))
}

// WithMeterProvider: see lock.WithMeterProvider. A Redlock also records
// the members won by each round (relock.redlock.nodes_won).
func WithMeterProvider(mp metric.MeterProvider) Option { return newOnly(core.WithMeterProvider(mp)) }

// WithHoldScopedToContext: see lock.WithHoldScopedToContext (off by
// default: the acquiring context bounds the wait only).
func WithHoldScopedToContext() CommonOption { return common(core.WithHoldScopedToContext()) }

// WithNameInMetrics: see lock.WithNameInMetrics (off by default, for
// cardinality); the name is the members' names joined with commas.
func WithNameInMetrics() Option { return newOnly(core.WithNameInMetrics()) }

// WithWatchdog: see lock.WithWatchdog.
func WithWatchdog(w *watchdog.Watchdog) Option {
	return newOnly(core.WithWatchdog((*lease.Watchdog)(w)))
}

// WithNodeTimeout bounds each member's attempt (default DefaultNodeTimeout,
// or lease/10 when shorter), so a dead master costs at most that; it is
// paid only when the members that answered cannot decide the round.
func WithNodeTimeout(d time.Duration) Option { return newOnly(core.WithNodeTimeout(d)) }

// WithDrift sets the clock drift allowance subtracted from the validity
// time (default lease/100 + 2 ms).
func WithDrift(d time.Duration) Option { return newOnly(core.WithDrift(d)) }

// DefaultNodeTimeout is the default node timeout: room for a loaded
// master's round trips across zones and a client GC pause, yet short
// enough that a round waiting on a dead member ends well within a lease.
const DefaultNodeTimeout = 250 * time.Millisecond

// Node outcomes in a NodeError.
const (
	OutcomeAcquired = "acquired"
	OutcomeHeld     = "held by another owner"
	OutcomeTimeout  = "timeout"
	OutcomeError    = "error"
	// OutcomePending: decided before the member answered; what it takes is given back.
	OutcomePending = "pending"
)

// NodeError is one member's outcome in a failed attempt or release.
// errors.Is(err, ErrNotAcquired) holds for OutcomeHeld.
type NodeError struct {
	Index   int    // the member's position
	Node    string // its Redis address and lock name
	Outcome string
	Err     error // the cause, for OutcomeTimeout and OutcomeError
}

// Error names the member and its outcome.
func (e *NodeError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("member %d (%s): %s: %v", e.Index, e.Node, e.Outcome, e.Err)
	}
	return fmt.Sprintf("member %d (%s): %s", e.Index, e.Node, e.Outcome)
}

// Unwrap returns ErrNotAcquired for OutcomeHeld, else the member's error.
func (e *NodeError) Unwrap() error {
	if e.Outcome == OutcomeHeld {
		return ErrNotAcquired
	}
	return e.Err
}

// Lock is one lock over several members: New needs a quorum of them
// (Redlock), NewMulti all of them (several resources together).
type Lock struct {
	// holds are this value's live holds, named when an Unlock's context carries none.
	holds  core.Live
	nodes  []core.Member
	quorum int
	// cfg.NodeTimeout and cfg.Drift are as given (0, < 0: derived per call from the lease).
	cfg  core.Config
	id   errs.Ident // its primitive, its name (the members' names joined) and why New refused its members
	inst telemetry.Instruments
	bg   background // what runs on after a call returned (Drain)
	// memberKeys: a hold of this Lock is a hold of each member too. reenter:
	// the holds an acquisition re-enters through (this Lock's, a member's, its other side).
	memberKeys, reenter []core.Key
	hkey                core.Key // this Lock's (its name does not make it: two Locks over one name are two)
}

// New returns a Redlock over members, one per independent Redis master,
// held when len(members)/2+1 of them are. Bad arguments (no members, a nil
// or invalid member, a bad option) make every method fail with ErrInvalidArgument.
func New(members []Member, opts ...Option) *Lock { return newLock(members, false, opts) }

// NewMulti returns a lock held when every member is: several resources
// (on one Redis or many) locked together, all or nothing.
func NewMulti(members []Member, opts ...Option) *Lock { return newLock(members, true, opts) }

func newLock(members []Member, multi bool, opts []Option) *Lock {
	l := &Lock{cfg: core.Apply(core.Options(opts, Option.newOption))}
	l.id.Primitive = "redlock"
	if multi {
		l.id.Primitive = "multilock"
	}
	names := make([]string, 0, len(members))
	// Every member is looked at, so that the name is the whole lock's.
	for i, m := range members {
		if m == nil {
			l.refuse("member %d is nil", i)
			continue
		}
		n, err := core.MemberOf(m)
		if err != nil {
			reason := strings.TrimPrefix(errs.Reason(err).Error(), errs.ErrInvalidArgument.Error()+": ")
			l.refuse("member %d: %s", i, reason)
			continue
		}
		names = append(names, n.Name)
		if reason := l.cfg.Adopt(n.Given); reason != "" {
			l.refuse("member %d: %s", i, reason)
		}
		// The same lock twice would vote twice (or be locked twice by a multi-lock).
		if j := slices.IndexFunc(l.nodes, func(o core.Member) bool { return core.SameLock(o, n) }); j >= 0 {
			l.refuse("members %d and %d are the same lock: %q on %s", j, i, n.Name, n.Addr)
		}
		l.nodes = append(l.nodes, n)
		l.memberKeys = append(l.memberKeys, n.Key)
		l.reenter = append(l.reenter, n.Reenter...) // each member's Reenter holds its own key
	}
	l.id.Name = nameOf(names)
	l.hkey = core.NewKey(core.Client{}, l.id.Primitive, l.id.Name, fmt.Sprintf("%p", l))
	l.reenter = slices.Insert(l.reenter, 0, l.hkey)
	switch {
	case l.id.Invalid != "":
	case len(members) == 0:
		l.id.Invalid = "no members"
	case l.cfg.Invalid != "":
		l.id.Invalid = l.cfg.Invalid
	default:
		l.id.Invalid = l.cfg.Unsupported(l.id.Primitive)
	}
	l.quorum = len(l.nodes)/2 + 1
	if multi {
		l.quorum = len(l.nodes)
	}
	l.inst = l.cfg.Instruments(l.id.Primitive, "", l.id.Name, tracing.SpanReleaseRedlock,
		tracing.Nodes.Int(len(l.nodes)), tracing.Quorum.Int(l.quorum))
	return l
}

// nameOf makes a Lock's name (see Lock.Name).
func nameOf(names []string) string {
	var uniq []string
	for _, n := range names {
		if !slices.Contains(uniq, n) {
			uniq = append(uniq, n)
		}
	}
	if len(names) < 2 {
		return strings.Join(uniq, ",")
	}
	return fmt.Sprintf("%s (%d members)", strings.Join(uniq, ","), len(names))
}

// nodeTimeout is the node timeout for lease: the one given, else
// min(DefaultNodeTimeout, lease/10), so a short lease keeps room for its validity.
func (l *Lock) nodeTimeout(lease time.Duration) time.Duration {
	if l.cfg.NodeTimeout > 0 {
		return l.cfg.NodeTimeout
	}
	return max(min(DefaultNodeTimeout, lease/10), time.Millisecond)
}

// drift is the drift allowance for lease: the one given, else lease/100 + 2 ms.
func (l *Lock) drift(lease time.Duration) time.Duration {
	if l.cfg.Drift >= 0 {
		return l.cfg.Drift
	}
	return lease/100 + 2*time.Millisecond
}

// refuse records the first reason the Lock cannot be used.
func (l *Lock) refuse(format string, args ...any) {
	if l.id.Invalid == "" {
		l.id.Invalid = fmt.Sprintf(format, args...)
	}
}

// Name is the members' names, each once, and their count: "job (5
// members)", "account:1,account:2 (2 members)".
func (l *Lock) Name() string { return l.ident().Name }

// Quorum is how many members must be held.
func (l *Lock) Quorum() int {
	if l == nil {
		return 0
	}
	return l.quorum
}

// unmade is the identity of a Lock not made by New or NewMulti.
var unmade = errs.Ident{Primitive: "redlock", Invalid: "Lock not made by redlock.New or NewMulti"}

// ident is l's identity in errors; a nil *Lock's refuses every call instead of panicking.
func (l *Lock) ident() *errs.Ident {
	if l == nil {
		return &nilLock
	}
	return &l.id
}

var nilLock = errs.Ident{Primitive: "redlock", Invalid: "nil *redlock.Lock"}

func (l *Lock) key() core.Key {
	if l == nil {
		return core.Key{}
	}
	return l.hkey
}

// Lock takes the lock in rounds (see the package documentation) until one
// wins the quorum within the validity time, or ctx or WithWaitTimeout ends
// the wait. The returned context is as lock.Mutex.Lock's; its fencing
// token is the largest of the members won (advisory).
func (l *Lock) Lock(ctx context.Context, opts ...LockOption) (context.Context, error) {
	return l.acquire(ctx, "lock", false, opts)
}

// TryLock makes one round: ErrNotAcquired (joined with each member's
// outcome) when the quorum was not won.
func (l *Lock) TryLock(ctx context.Context, opts ...LockOption) (context.Context, error) {
	return l.acquire(ctx, "trylock", true, opts)
}

type outcome struct {
	acquired bool
	token    int64
	err      *NodeError // nil when acquired
	// behind: the round did not wait for it; the attempt gives back what it takes.
	behind bool
}

// Remaining returns how long the innermost hold ctx carries may be counted
// on (for a Redlock, the validity the watchdog counts); see lock.Remaining.
func Remaining(ctx context.Context) (time.Duration, bool) { return core.Remaining(ctx) }

// FencingToken returns the fencing token of this Lock's hold that ctx
// carries, even under holds of other locks; see lock.Mutex.FencingToken.
func (l *Lock) FencingToken(ctx context.Context) (int64, bool) { return core.TokenOf(ctx, l.key()) }

// Do takes the lock (as Lock), runs fn with the hold's context and
// unlocks on every path, a panic in fn included; see lock.Mutex.Do.
func (l *Lock) Do(ctx context.Context, fn func(held context.Context) error) error {
	return core.Do(ctx, func(ctx context.Context) (context.Context, error) { return l.Lock(ctx) }, l.Unlock, fn)
}

// Unlock releases the hold that returned ctx on every member in parallel.
// It returns nil once a quorum released (a multi-lock needs all; failures
// become events on ctx's span), else an error naming the failed members.
// Other return values as lock.Mutex.Unlock's.
func (l *Lock) Unlock(ctx context.Context) error {
	if err := l.ident().Check("unlock", ctx, unmade); err != nil {
		return err
	}
	return l.id.Wrap("unlock", core.End(ctx, l.key(), &l.holds))
}
