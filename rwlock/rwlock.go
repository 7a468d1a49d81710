package rwlock

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/relock-go/relock"
	"github.com/relock-go/relock/internal/core"
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
	// ErrUpgradeNotSupported: an owner holding only the read lock asked for
	// the write lock; waiting would deadlock on its own read lock.
	ErrUpgradeNotSupported = errors.New("upgrade from read to write lock not supported")
)

// WithLeaseTime: see lock.WithLeaseTime.
func WithLeaseTime(d time.Duration) CommonOption { return common(core.WithLeaseTime(d)) }

// WithWatchdogTimeout: see lock.WithWatchdogTimeout.
func WithWatchdogTimeout(d time.Duration) CommonOption { return common(core.WithWatchdogTimeout(d)) }

// WithWaitTimeout: see lock.WithWaitTimeout.
func WithWaitTimeout(d time.Duration) CommonOption { return common(core.WithWaitTimeout(d)) }

// WithUnlockTimeout: see lock.WithUnlockTimeout.
func WithUnlockTimeout(d time.Duration) Option { return newOnly(core.WithUnlockTimeout(d)) }

// WithLogger: see lock.WithLogger.
func WithLogger(l *slog.Logger) CommonOption { return common(core.WithLogger(l)) }

// WithTracerProvider: see lock.WithTracerProvider.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return newOnly(core.WithTracerProvider(tp))
}

// WithMeterProvider: see lock.WithMeterProvider. The metrics of an
// RWMutex carry the side (lock.side: read or write).
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

// WithWatchdog: see lock.WithWatchdog.
func WithWatchdog(w *watchdog.Watchdog) Option {
	return newOnly(core.WithWatchdog((*lease.Watchdog)(w)))
}

const primitive = "rwlock"

// access says which half of the lock a hold is: read or write.
type access int

const (
	read access = iota
	write
)

func (s access) String() string {
	if s == write {
		return "write"
	}
	return "read"
}

// RWMutex is a distributed reader/writer lock: many readers or one writer,
// each side reentrant per owner; a waiting writer blocks new readers.
type RWMutex struct {
	holds    core.Live // live holds made here, named when an Unlock's context has none
	client   core.Client
	name     string
	cfg      core.Config
	id       errs.Ident // its name in errors, and why New refused its arguments
	channel  string
	prefix   string // {name}, the prefix of readers' lease keys
	waiters  string // zset of waiting writers
	tokenKey string
	// Prefixes of unlock and acquire latch keys, completed by a request id.
	latchPrefix        string
	acquireLatchPrefix string
	// The keys and arguments every call passes, boxed once.
	args struct {
		name, channel, prefix, waiters, token, publish any
	}
	hub     *core.Hub
	inst    [2]telemetry.Instruments // by side
	keys    [2]core.Key              // by side: its holds in a context
	leaseOf [2]string                // by side: the Lock of its leases' lease.ID
	gone    lease.Listener           // tells the waiters of a key found gone: made once
}

// New returns the RWMutex called name on client. It does not touch Redis;
// bad arguments are reported as ErrInvalidArgument by every method.
func New(client redis.UniversalClient, name string, opts ...Option) *RWMutex {
	c := core.ClientOf(client)
	rw := &RWMutex{client: c, name: name, cfg: core.Apply(newOptions(opts))}
	rw.keys = [2]core.Key{read: core.NewKey(c, "rlock", name, ""), write: core.NewKey(c, "wlock", name, "")}
	rw.id = errs.Ident{Primitive: primitive, Name: name, Invalid: rw.cfg.Check(c.Client, "lock", name)}
	if rw.id.Invalid != "" {
		return rw
	}
	rw.channel = scripts.RWLockChannel(name)
	rw.latchPrefix = scripts.UnlockLatch(name)
	rw.acquireLatchPrefix = scripts.AcquireLatch(name)
	rw.prefix = scripts.Tag(name)
	rw.waiters = scripts.WriteWaiters(name)
	rw.tokenKey = scripts.Token(name)
	rw.hub = core.For(c.Client)
	rw.args.name, rw.args.channel, rw.args.prefix = name, rw.channel, rw.prefix
	rw.args.waiters, rw.args.token, rw.args.publish = rw.waiters, rw.tokenKey, rw.hub.PublishCommand()
	rw.gone = lease.LostFunc(func(error) { rw.hub.Freed(rw.channel, rw.cfg.UnlockTimeout) })
	rw.leaseOf = [2]string{read.String() + "\x00" + name, write.String() + "\x00" + name}
	rw.inst[read] = rw.cfg.Instruments(primitive, read.String(), name, tracing.SpanReleaseReadLock)
	rw.inst[write] = rw.cfg.Instruments(primitive, write.String(), name, tracing.SpanReleaseWriteLock)
	return rw
}

// Name is the lock's name: the Redis key of its hash.
func (rw *RWMutex) Name() string {
	if rw == nil {
		return ""
	}
	return rw.name
}

// unmade is the identity of an RWMutex not made by New (its zero value).
var unmade = errs.Ident{Primitive: primitive, Invalid: "RWMutex not made by rwlock.New"}

// ident is rw's identity in errors; a nil *RWMutex's refuses every call.
func (rw *RWMutex) ident() *errs.Ident {
	if rw == nil {
		return &nilRWMutex
	}
	return &rw.id
}

var nilRWMutex = errs.Ident{Primitive: primitive, Invalid: "nil *rwlock.RWMutex"}

func (rw *RWMutex) key(s access) core.Key {
	if rw == nil {
		return core.Key{}
	}
	return rw.keys[s]
}

func (rw *RWMutex) leaseID(s access, ownerID string) lease.ID {
	return lease.ID{Lock: rw.leaseOf[s], Owner: ownerID}
}

func (rw *RWMutex) timeoutPrefix(ownerID string) string {
	return scripts.ReadTimeouts(rw.name, ownerID)
}

// RLock takes the read lock, waiting while a writer holds it or waits for
// it. The returned context and opts are as lock.Mutex.Lock's.
func (rw *RWMutex) RLock(ctx context.Context, opts ...LockOption) (context.Context, error) {
	return rw.acquire(ctx, "rlock", read, false, opts)
}

// TryRLock makes one attempt at the read lock: ErrNotAcquired when a
// writer holds it or waits for it.
func (rw *RWMutex) TryRLock(ctx context.Context, opts ...LockOption) (context.Context, error) {
	return rw.acquire(ctx, "tryrlock", read, true, opts)
}

// Lock takes the write lock, waiting while anyone else holds the lock.
// While it waits, new readers are held back. ErrUpgradeNotSupported when
// ctx's owner holds only the read lock. opts are as RLock's.
func (rw *RWMutex) Lock(ctx context.Context, opts ...LockOption) (context.Context, error) {
	return rw.acquire(ctx, "lock", write, false, opts)
}

// TryLock makes one attempt at the write lock.
func (rw *RWMutex) TryLock(ctx context.Context, opts ...LockOption) (context.Context, error) {
	return rw.acquire(ctx, "trylock", write, true, opts)
}

// RUnlock releases the read hold that returned ctx; errors as lock.Mutex.Unlock's.
func (rw *RWMutex) RUnlock(ctx context.Context) error {
	if err := rw.ident().Check("runlock", ctx, unmade); err != nil {
		return err
	}
	return rw.id.Wrap("runlock", core.End(ctx, rw.key(read), &rw.holds))
}

// Unlock releases the write hold that returned ctx; errors as lock.Mutex.Unlock's.
func (rw *RWMutex) Unlock(ctx context.Context) error {
	if err := rw.ident().Check("unlock", ctx, unmade); err != nil {
		return err
	}
	if core.Nested(ctx, rw.key(write), rw.key(read)) {
		return rw.id.Wrap("unlock", fmt.Errorf("%w: the context is a read hold's, taken inside the write hold: RUnlock it, and Unlock the write hold's own context", ErrNotHeld))
	}
	return rw.id.Wrap("unlock", core.End(ctx, rw.key(write), &rw.holds))
}

// FencingToken returns the fencing token of the hold that returned ctx,
// drawn by every acquisition, read or write, from the counter shared with
// Redisson's RFencedLock of the same name.
func FencingToken(ctx context.Context) (int64, bool) { return core.Token(ctx) }

func (rw *RWMutex) acquire(ctx context.Context, op string, s access, once bool, opts []LockOption) (context.Context, error) {
	if err := rw.ident().Check(op, ctx, unmade); err != nil {
		return nil, err
	}
	cfg, bad := rw.cfg.PerCall(primitive, lockOptions(opts))
	if bad != "" {
		return nil, rw.id.Refuse(op, bad)
	}
	// A hold of either side of this lock in ctx lends its owner.
	ownerID, shared := core.OwnerOf(ctx, rw.key(read), rw.key(write))
	if !shared {
		ownerID = core.Mint()
	}
	wd := rw.cfg.Watchdog
	var readLease, writeLease *lease.Lease // a minted owner has none
	if shared {
		readLease = wd.Find(rw.client.Client, rw.leaseID(read, ownerID))
		writeLease = wd.Find(rw.client.Client, rw.leaseID(write, ownerID))
	}
	holdsRead, holdsWrite := readLease != nil, writeLease != nil
	leaseTime := cfg.Lease()
	// A re-entry keeps its hold's lease, so Redis and the watchdog agree.
	if s == read && readLease != nil {
		leaseTime = readLease.Timeout()
	} else if s == write && writeLease != nil {
		leaseTime = writeLease.Timeout()
	}
	if s == write && holdsRead && !holdsWrite {
		return nil, rw.id.Wrap(op, ErrUpgradeNotSupported)
	}

	a := &attempt{rw: rw, cfg: cfg, side: s, owner: ownerID, lease: leaseTime, wd: wd, mode: scripts.ModeMinted}
	if shared {
		a.mode, a.latch = scripts.ModeLatch, core.RequestKey(rw.acquireLatchPrefix)
	}
	// A writer's release may take the read lock for a minted reader (handoff.go).
	if s == read && !once && !shared {
		a.claim = &readClaim{rw: rw, ctx: ctx, owner: ownerID, lease: leaseTime}
	}
	// A re-entry or the writer's read must not queue behind those waiting on it.
	direct := (s == read && (holdsRead || holdsWrite)) || (s == write && holdsWrite)
	tr, req := a.request(once, direct)
	if err := core.Acquire(ctx, tr, req); err != nil {
		if cfg.HolderLabel != "" && errors.Is(err, ErrNotAcquired) {
			err = core.NameHolders(ctx, rw.client, err, rw.heldBy)
		}
		return nil, rw.id.Wrap(op, err)
	}
	return a.held, nil
}

// withdrawMark takes back the waiting mark of a writer that gave up
// (core.Withdraw), after any try still in flight (late). A stale mark
// grants nothing, and every acquire purges it one lease after the writer's
// last try (server time), so it delays new readers by a lease at most.
func (rw *RWMutex) withdrawMark(ctx context.Context, ownerID string, late <-chan struct{}) {
	_ = core.Withdraw(ctx, late, rw.client, rw.cfg.UnlockTimeout, withdrawLua{
		WriteWaiters: rw.args.waiters, Channel: rw.args.channel,
		Owner: ownerID, Publish: rw.args.publish,
	}.call())
}

func (rw *RWMutex) spec(s access, ownerID string, leaseTime time.Duration, renewed bool) lease.Spec {
	sp := lease.Spec{
		Timeout:   leaseTime,
		Renew:     renewed,
		ID:        rw.leaseID(s, ownerID),
		Name:      rw.name,
		Primitive: primitive,
		Sync:      rw.cfg.ReplicaPolicy(),
		Gone:      rw.gone,
	}
	if s == read {
		sp.Renewer = readRenewer
		sp.Targets = []lease.Target{{Client: rw.client.Client, Keys: []string{rw.name, rw.timeoutPrefix(ownerID)}, Arg: ownerID}}
	} else {
		sp.Renewer = writeRenewer
		sp.Targets = []lease.Target{{Client: rw.client.Client, Keys: []string{rw.name}, Arg: ownerID + ":write"}}
	}
	return sp
}

// newHold registers a hold of side s; fresh: its owner was minted here and has no lease yet.
func (rw *RWMutex) newHold(ctx context.Context, cfg *core.Config, s access, ownerID string, fresh bool, count, token int64, sentAt time.Time, leaseTime time.Duration, traced bool) (context.Context, error) {
	sp := rw.spec(s, ownerID, leaseTime, cfg.Renewed())
	sp.Token = token
	label := rw.label(ctx, cfg, &sp, s, ownerID, count, leaseTime)
	ls := core.Lease(rw.cfg.Watchdog, sp, count > 1, fresh, sentAt)
	release := rw.releaseRead
	if s == write {
		release = rw.releaseWrite
	}
	return core.Start(ctx, rw.key(s), &core.Hold{Owner: ownerID, Token: token, Lease: ls, Taken: label, Telemetry: rw.inst[s].Release, Traced: traced, Scoped: cfg.ScopedHold, Live: &rw.holds, Reentry: count > 1}, release)
}

func (rw *RWMutex) latch() string {
	return core.RequestKey(rw.latchPrefix)
}

// runRelease runs side s's release script until it answers or timeout
// passes (idempotent via the latch): 1 freed, 0 holders remain, -1 not held.
func (rw *RWMutex) runRelease(ctx context.Context, s access, ownerID string, timeout time.Duration) (int64, error) {
	return rw.releaseOnce(ctx, s, ownerID, rw.latch(), "", timeout)
}

// releaseOnce is runRelease with its latch given; with a give-back's
// acquireLatch, the count goes once, only if that run counted (else -2).
func (rw *RWMutex) releaseOnce(ctx context.Context, s access, ownerID, latch, acquireLatch string, timeout time.Duration) (int64, error) {
	var res int64
	var err error
	if s == read {
		res, err = readReleaseLua{
			Lock: rw.args.name, Channel: rw.args.channel, LeaseKeys: rw.timeoutPrefix(ownerID), Prefix: rw.args.prefix, Latch: latch,
			AcquireLatch: acquireLatch, Owner: ownerID, Publish: rw.args.publish, LatchLife: rw.cfg.LatchArg(timeout),
		}.call().Retrying(ctx, rw.client.Client, timeout).Int64()
	} else {
		var vals []int64
		vals, err = rw.writeRelease(ctx, ownerID, latch, acquireLatch, timeout, nil)
		if err == nil {
			res = vals[0]
		}
	}
	if err == nil && res == 1 {
		rw.hub.Release(rw.channel)
	}
	return res, err
}

func (rw *RWMutex) releaseRead(ctx context.Context, h *core.Hold) error {
	last := h.Lease.Release()
	res, err := rw.runRelease(ctx, read, h.Owner, rw.cfg.UnlockTimeout)
	rw.dropLabel(ctx, h, read, last && err == nil && res != -1)
	return rw.released(h, res, err)
}

func (rw *RWMutex) released(h *core.Hold, res int64, err error) error {
	return core.Released(res, err, h.Lease, "the lock was no longer held in Redis")
}

// Side is one half of an RWMutex as a lock of its own, for APIs that take
// a Lock/TryLock/Unlock value, such as a redlock member.
type Side struct {
	redlockHook // makes the side a redlock.Member
	rw          *RWMutex
	write       bool
}

// ReadLocker returns the read side.
func (rw *RWMutex) ReadLocker() *Side { return rw.locker(false) }

// WriteLocker returns the write side.
func (rw *RWMutex) WriteLocker() *Side { return rw.locker(true) }

func (rw *RWMutex) locker(write bool) *Side {
	s := &Side{rw: rw, write: write}
	s.redlockHook = s.redlockNode
	return s
}

// Lock takes this side (RLock or Lock); opts are as RLock's.
func (s *Side) Lock(ctx context.Context, opts ...LockOption) (context.Context, error) {
	if s == nil {
		return nil, nilSide("lock")
	}
	if s.write {
		return s.rw.Lock(ctx, opts...)
	}
	return s.rw.RLock(ctx, opts...)
}

// TryLock tries this side once.
func (s *Side) TryLock(ctx context.Context, opts ...LockOption) (context.Context, error) {
	if s == nil {
		return nil, nilSide("trylock")
	}
	if s.write {
		return s.rw.TryLock(ctx, opts...)
	}
	return s.rw.TryRLock(ctx, opts...)
}

// Unlock releases this side.
func (s *Side) Unlock(ctx context.Context) error {
	if s == nil {
		return nilSide("unlock")
	}
	if s.write {
		return s.rw.Unlock(ctx)
	}
	return s.rw.RUnlock(ctx)
}

// Name is the lock's name.
func (s *Side) Name() string {
	if s == nil {
		return ""
	}
	return s.rw.Name()
}

// nilSide refuses op on a nil *Side.
func nilSide(op string) error { return errs.Invalid(op, primitive, "", "nil *rwlock.Side") }

// redlockHook makes a Side a redlock.Member without an exported method.
type redlockHook = core.MemberHook

// redlockNode returns this side as a member of a Redlock (package
// redlock). A Redlock writer does not mark itself as waiting.
func (s *Side) redlockNode() (core.Member, error) {
	if s.rw == nil {
		return core.Member{}, errs.Invalid("redlock", primitive, "", "nil rwlock side")
	}
	rw := s.rw
	if err := rw.ident().Check("redlock", context.Background(), unmade); err != nil {
		return core.Member{}, err
	}
	if rw.cfg.HolderLabel != "" {
		return core.Member{}, rw.id.Refuse("redlock", "a Redlock member keeps no holder label (WithHolderLabel)")
	}
	sd := read
	if s.write {
		sd = write
	}
	return core.Member{
		Name:    rw.name,
		Kind:    sd.String() + " lock",
		Addr:    rw.client.Addr(),
		Client:  rw.client,
		Given:   rw.cfg.Given,
		Key:     rw.key(sd),
		Reenter: []core.Key{rw.key(read), rw.key(write)},
		TTL:     rw.TTL,
		Try: func(ctx context.Context, ownerID string, leaseTime time.Duration) (bool, int64, time.Duration, error) {
			count, token, ttl, err := rw.runAcquire(ctx, rw.cfg.ReplicaPolicy(), sd, ownerID, leaseTime, "", scripts.ModeNone, "")
			return count > 0, token, ttl, err
		},
		Release: func(ctx context.Context, ownerID string, timeout time.Duration) (bool, error) {
			res, err := rw.runRelease(ctx, sd, ownerID, timeout)
			return res != -1, err
		},
		Renewal: func(ownerID string) lease.Target {
			t := rw.spec(sd, ownerID, rw.cfg.Lease(), rw.cfg.Renewed()).Targets[0]
			t.Renewer = readRenewer
			if sd == write {
				t.Renewer = writeRenewer
			}
			return t
		},
	}, nil
}
