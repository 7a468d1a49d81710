package semaphore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/relock-go/relock/internal/core"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/relock-go/relock"
	"github.com/relock-go/relock/internal/errs"
	"github.com/relock-go/relock/internal/lease"
	"github.com/relock-go/relock/internal/scripts"
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
	// ErrSizeMismatch: Redis records another size for this semaphore than
	// the Semaphore was built with; see Resize and WithRecordedSize.
	ErrSizeMismatch = errors.New("semaphore size mismatch")
)

// WithLeaseTime gives every permit a fixed lease and no renewal.
func WithLeaseTime(d time.Duration) CommonOption { return common(core.WithLeaseTime(d)) }

// WithWatchdogTimeout sets the permit lease the watchdog keeps renewing.
func WithWatchdogTimeout(d time.Duration) CommonOption { return common(core.WithWatchdogTimeout(d)) }

// WithWaitTimeout bounds how long Acquire waits.
func WithWaitTimeout(d time.Duration) CommonOption { return common(core.WithWaitTimeout(d)) }

// WithUnlockTimeout bounds Release.
func WithUnlockTimeout(d time.Duration) Option { return newOnly(core.WithUnlockTimeout(d)) }

// WithLogger: see lock.WithLogger.
func WithLogger(l *slog.Logger) CommonOption { return common(core.WithLogger(l)) }

// WithTracerProvider sets where acquire spans go.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return newOnly(core.WithTracerProvider(tp))
}

// WithMeterProvider: see lock.WithMeterProvider.
func WithMeterProvider(mp metric.MeterProvider) Option { return newOnly(core.WithMeterProvider(mp)) }

// WithHoldScopedToContext: see lock.WithHoldScopedToContext (off by default).
func WithHoldScopedToContext() CommonOption { return common(core.WithHoldScopedToContext()) }

// WithNameInMetrics: see lock.WithNameInMetrics (off by default).
func WithNameInMetrics() Option { return newOnly(core.WithNameInMetrics()) }

// WithReplicaSync bounds how long an acquisition waits for its server's
// replicas to acknowledge it (default 1s; 0: off); see lock.WithReplicaSync.
func WithReplicaSync(timeout time.Duration) Option { return newOnly(core.WithReplicaSync(timeout)) }

// WithMinReplicas is how many replicas must acknowledge an acquisition (default 1).
func WithMinReplicas(n int) Option { return newOnly(core.WithMinReplicas(n)) }

// WithWatchdog sets the watchdog that renews permits.
func WithWatchdog(w *watchdog.Watchdog) Option {
	return newOnly(core.WithWatchdog((*lease.Watchdog)(w)))
}

// WithRecordedSize makes the Semaphore use the size Redis records for the
// name instead of failing with ErrSizeMismatch, for a rolling deploy that
// changes the size: the new size is written once the semaphore goes idle
// (no permit held, nobody waiting) or by Resize. Size still reports the
// built size; Available, grants and Acquire's limit on n follow the record.
func WithRecordedSize() Option { return newOnly(core.WithRecordedSize()) }

// resizedLife is how long a Resize's size outlives the last permit or
// waiter: long enough for the name's Semaphores to agree.
const resizedLife = time.Hour

const primitive = "semaphore"

// Semaphore is a distributed weighted semaphore; a crashed holder's
// permits come back when its lease ends.
type Semaphore struct {
	holds  core.Live // live holds made here, named when a Release's context has none
	client core.Client
	name   string
	size   atomic.Int64
	// resizing is read-held by every script that sends the size and held by
	// Resize until it stores the new one, so Redis and s.size never disagree.
	resizing sync.RWMutex
	cfg      core.Config
	id       errs.Ident // its name in errors, and why New refused its arguments
	permits  string
	weights  string
	// Made once: its leases' keys, and the Lock of their lease.ID.
	leaseKeys []string
	leaseOf   string
	waiters   string
	marks     string
	channel   string
	// latchPrefix + a request id names an unlock latch key.
	latchPrefix string
	// The keys and arguments every call passes, boxed once.
	args struct {
		name, permits, weights, waiters, marks, channel, publish any
	}
	hub  *core.Hub
	inst telemetry.Instruments
	hkey core.Key // its holds in a context
}

// MaxSize is the largest size a Semaphore takes: the scripts count permits
// in Lua doubles, exact only up to 2^53, and compare n with size - used
// rather than adding, so no intermediate passes the size.
const MaxSize = 1 << 53

// checkSize returns why size cannot be a Semaphore's size, or "".
func checkSize(size int64) string {
	switch {
	case size <= 0:
		return fmt.Sprintf("size %d must be positive", size)
	case size > MaxSize:
		return fmt.Sprintf("size %d exceeds 2^53 (%d), the largest integer Redis's Lua numbers hold exactly", size, int64(MaxSize))
	}
	return ""
}

// New returns the Semaphore called name with size permits on client,
// without touching Redis. Bad arguments (nil client, empty name, size <= 0
// or > MaxSize, a bad option) are reported as ErrInvalidArgument.
func New(client redis.UniversalClient, name string, size int64, opts ...Option) *Semaphore {
	c := core.ClientOf(client)
	s := &Semaphore{client: c, name: name, cfg: core.Apply(newOptions(opts))}
	s.hkey = core.NewKey(c, primitive, name, "")
	s.size.Store(size)
	s.id = errs.Ident{Primitive: primitive, Name: name, Invalid: s.cfg.Check(c.Client, "semaphore", name)}
	if s.id.Invalid == "" {
		s.id.Invalid = checkSize(size)
	}
	if s.id.Invalid != "" {
		return s
	}
	s.permits = scripts.Permits(name)
	s.weights = scripts.Weights(name)
	s.leaseKeys = []string{s.permits, name, s.weights}
	s.leaseOf = primitive + "\x00" + name
	s.waiters = scripts.Waiters(name)
	s.marks = scripts.WaiterExpiry(name)
	s.channel = scripts.SemaphoreChannel(name)
	s.latchPrefix = scripts.UnlockLatch(name)
	s.hub = core.For(c.Client)
	s.args.name, s.args.permits, s.args.weights = name, s.permits, s.weights
	s.args.waiters, s.args.marks, s.args.channel = s.waiters, s.marks, s.channel
	s.args.publish = s.hub.PublishCommand()
	s.inst = s.cfg.Instruments(primitive, "", name, tracing.SpanReleaseSemaphore)
	return s
}

// Name is the semaphore's name: the Redis key of its hash.
func (s *Semaphore) Name() string {
	if s == nil {
		return ""
	}
	return s.name
}

// Size is the number of permits this Semaphore was built with.
func (s *Semaphore) Size() int64 {
	if s == nil {
		return 0
	}
	return s.size.Load()
}

// unmade is the identity of a Semaphore not made by New (its zero value).
var unmade = errs.Ident{Primitive: primitive, Invalid: "Semaphore not made by semaphore.New"}

// ident is s's identity in errors; a nil *Semaphore's refuses every call.
func (s *Semaphore) ident() *errs.Ident {
	if s == nil {
		return &nilSemaphore
	}
	return &s.id
}

var nilSemaphore = errs.Ident{Primitive: primitive, Invalid: "nil *semaphore.Semaphore"}

func (s *Semaphore) key() core.Key {
	if s == nil {
		return core.Key{}
	}
	return s.hkey
}

// sizePolicy is the scripts' argument for WithRecordedSize.
func (s *Semaphore) sizePolicy() string {
	if s.cfg.RecordedSize {
		return "recorded"
	}
	return ""
}

func (s *Semaphore) mismatch(recorded, mine int64) error {
	return fmt.Errorf("%w: Redis records size %d, this Semaphore was built with %d", ErrSizeMismatch, recorded, mine)
}

// Acquire takes n permits, waiting first come first served. The returned
// context carries the permit, which Release gives back, and is done when
// the permit ends (cause ErrLockLost when its lease was lost; a grant that
// arrived after its lease lapsed is given back and reported so). n <= 0 or
// n > size is ErrInvalidArgument at once.
func (s *Semaphore) Acquire(ctx context.Context, n int64, opts ...AcquireOption) (context.Context, error) {
	return s.acquire(ctx, "acquire", n, false, opts)
}

// TryAcquire takes n permits if they are free now and nobody waits ahead:
// ErrNotAcquired otherwise.
func (s *Semaphore) TryAcquire(ctx context.Context, n int64, opts ...AcquireOption) (context.Context, error) {
	return s.acquire(ctx, "tryacquire", n, true, opts)
}

func (s *Semaphore) acquire(ctx context.Context, op string, n int64, once bool, opts []AcquireOption) (context.Context, error) {
	if err := s.ident().Check(op, ctx, unmade); err != nil {
		return nil, err
	}
	cfg, bad := s.cfg.PerCall(primitive, acquireOptions(opts))
	if bad != "" {
		return nil, s.id.Refuse(op, bad)
	}
	size := s.size.Load()
	if n <= 0 || n > size {
		return nil, errs.Invalid(op, primitive, s.name, fmt.Sprintf("n %d must be in 1..size %d", n, size))
	}
	ownerID, ok := core.OwnerOf(ctx, s.key())
	if !ok {
		ownerID = core.Mint()
	}
	wd := s.cfg.Watchdog
	leaseTime := cfg.Lease()
	permitID := core.RequestID()
	t := &permitTry{s: s, cfg: cfg, owner: ownerID, sync: cfg.ReplicaPolicy(), wd: wd,
		claim: waiter{s: s, ctx: ctx, permitID: permitID, n: n, lease: leaseTime}}
	tr, req := t.request(size, once)
	if err := core.Acquire(ctx, tr, req); err != nil {
		if cfg.HolderLabel != "" && errors.Is(err, ErrNotAcquired) {
			err = core.NameHolders(ctx, s.client, err, s.heldBy)
		}
		return nil, s.id.Wrap(op, err)
	}
	return t.held, nil
}

// newHold makes the hold of a permit acquired by t.
func (s *Semaphore) newHold(ctx context.Context, t *permitTry, traced bool) (context.Context, error) {
	permitID, leaseTime := t.claim.permitID, t.claim.lease
	spec := lease.Spec{
		Renewer: renewer,
		Targets: []lease.Target{{Client: s.client.Client, Keys: s.leaseKeys, Arg: permitID}},
		Timeout: leaseTime,
		Renew:   t.cfg.Renewed(),
		// Registered so that a ForceRelease finds this process's holds.
		ID:        lease.ID{Lock: s.leaseOf, Owner: permitID},
		Name:      s.name,
		Primitive: primitive,
		Sync:      t.cfg.ReplicaPolicy(),
	}
	label := s.label(ctx, t.cfg, &spec, permitID, leaseTime)
	l := t.wd.Start(spec, t.claim.sentAt)
	return core.Start(ctx, s.key(), &core.Hold{Owner: t.owner, Lease: l, Taken: permitTaken{permitID, label, t.claim.n}, Telemetry: s.inst.Release, Traced: traced, Scoped: t.cfg.ScopedHold, Live: &s.holds}, s.release)
}

// maxMarkLife bounds the life of a waiter's mark (a waiting head refreshes
// it every third of that), so a mark left behind holds others back no longer.
const maxMarkLife = 3 * time.Second

// withdrawMark takes back the queue entry of a waiter that gave up
// (core.Withdraw). A stale mark holds no permit, and acquires drop it
// min(lease, maxMarkLife) after its last refresh (server time).
func (s *Semaphore) withdrawMark(ctx context.Context, waiterID string) {
	_ = core.Withdraw(ctx, nil, s.client, s.cfg.UnlockTimeout, withdrawLua{
		Waiters: s.args.waiters, Marks: s.args.marks, Channel: s.args.channel, Semaphore: s.args.name, Permits: s.args.permits, Weights: s.args.weights,
		Waiter: waiterID, Publish: s.args.publish,
	}.call())
}

// giveBack releases, in the background, the permits a given-up acquire
// may have left when its last try's reply was lost, retrying for up to
// window (core.GiveBack): the lease after a late try a stalled server may run.
func (s *Semaphore) giveBack(ctx context.Context, permitID string, window time.Duration) {
	core.GiveBack(ctx, nil, max(s.cfg.UnlockTimeout, window), func(ctx context.Context) error { return s.undo(ctx, permitID) })
}

// undo releases the permits one acquisition may have taken, retried for
// the unlock timeout despite ctx's cancellation.
func (s *Semaphore) undo(ctx context.Context, permitID string) error {
	_, err := s.releaseServing(context.WithoutCancel(ctx), permitID, 0)
	return err
}

// Do acquires n permits (as Acquire), runs fn with the hold's context and
// releases them on every path, a panic in fn included; see lock.Mutex.Do.
func (s *Semaphore) Do(ctx context.Context, n int64, fn func(held context.Context) error) error {
	return core.Do(ctx, func(ctx context.Context) (context.Context, error) { return s.Acquire(ctx, n) }, s.Release, fn)
}

// Remaining returns how long the innermost hold in ctx may still be counted on.
func Remaining(ctx context.Context) (time.Duration, bool) { return core.Remaining(ctx) }

// Release gives back the permits of the acquisition that returned ctx (or
// an ancestor of ctx) and wakes waiters. A second Release returns
// ErrNotHeld; a permit whose lease was lost, ErrLockLost; one released
// when its acquiring context ended, nil. It needs only ctx's values and
// runs on its own timeout.
func (s *Semaphore) Release(ctx context.Context) error {
	if err := s.ident().Check("release", ctx, unmade); err != nil {
		return err
	}
	return s.id.Wrap("release", core.End(ctx, s.key(), &s.holds))
}

func (s *Semaphore) release(ctx context.Context, h *core.Hold) error {
	h.Lease.Stop()
	taken := h.Taken.(permitTaken)
	res, err := s.releaseServing(ctx, taken.id, taken.n)
	if taken.labeled && err == nil && res != -1 {
		core.DropLabel(ctx, s.client.Client, s.name, taken.id)
	}
	return core.Released(res, err, h.Lease, "the permit had expired in Redis")
}

// Available returns how many permits are free now (expired permits
// reclaimed first). ErrSizeMismatch when Redis records another size.
func (s *Semaphore) Available(ctx context.Context) (int64, error) {
	if err := s.ident().Check("available", ctx, unmade); err != nil {
		return 0, err
	}
	var vals []int64
	var size int64
	err := s.client.Within(ctx, s.cfg.UnlockTimeout, func(ctx context.Context) (err error) {
		s.resizing.RLock()
		defer s.resizing.RUnlock()
		size = s.size.Load()
		vals, err = availableLua{
			Semaphore: s.args.name, Permits: s.args.permits, Weights: s.args.weights, Waiters: s.args.waiters, Marks: s.args.marks,
			Size: size, SizePolicy: s.sizePolicy(),
		}.call().Run(ctx, s.client.Client).Int64Slice()
		return err
	})
	if err != nil {
		return 0, s.id.Wrap("available", err)
	}
	if len(vals) != 2 {
		return 0, s.id.Wrap("available", fmt.Errorf("unexpected reply %v", vals))
	}
	switch vals[0] {
	case -2:
		return 0, s.id.Wrap("available", s.mismatch(vals[1], size))
	case -4:
		return 0, s.id.Wrap("available", errs.WrongKind(vals[1]))
	}
	return vals[1], nil
}

// Resize records size as the semaphore's size in Redis, used by this
// Semaphore from now on, and wakes waiters. Permits held beyond a smaller
// size stay until released. The record lives while permits are held or
// wanted, and at least an hour.
func (s *Semaphore) Resize(ctx context.Context, size int64) error {
	if err := s.ident().Check("resize", ctx, unmade); err != nil {
		return err
	}
	if reason := checkSize(size); reason != "" {
		return errs.Invalid("resize", primitive, s.name, reason)
	}
	// A resize the caller stopped waiting for still takes effect here.
	return s.id.Wrap("resize", s.client.Within(ctx, s.cfg.UnlockTimeout, func(ctx context.Context) error {
		s.resizing.Lock()
		defer s.resizing.Unlock()
		resize := resizeLua{
			Semaphore: s.args.name, Channel: s.args.channel, Permits: s.args.permits, Weights: s.args.weights, Waiters: s.args.waiters, Marks: s.args.marks,
			Size: size, Publish: s.args.publish, RecordLifeMS: resizedLife.Milliseconds(),
		}
		old, err := resize.call().Run(ctx, s.client.Client).Int64()
		if err != nil {
			return err
		}
		if old < 0 {
			return errs.WrongKind(-old)
		}
		s.size.Store(size)
		return nil
	}))
}
