package lock

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/trace"

	"github.com/relock-go/relock"
	"github.com/relock-go/relock/internal/core"
	"github.com/relock-go/relock/internal/errs"
	"github.com/relock-go/relock/internal/lease"
	"github.com/relock-go/relock/internal/scripts"
	"github.com/relock-go/relock/internal/telemetry"
	"github.com/relock-go/relock/tracing"
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

const (
	primitive     = "lock"
	unlockMessage = 0 // Redisson's LockPubSub.UNLOCK_MESSAGE
)

// Mutex is a reentrant lock on Redis, in Redisson's RLock layout, safe for
// concurrent use: ownership travels in the context, not in the Mutex.
type Mutex struct {
	redlockHook // makes the Mutex a redlock.Member
	// holds are this value's live holds, named by an Unlock whose ctx has none.
	holds    core.Live
	client   core.Client
	name     string
	cfg      core.Config
	id       errs.Ident // its name in errors, and why New refused its arguments
	channel  string
	tokenKey string
	hub      *core.Hub
	inst     telemetry.Instruments
	// Made once, read-only: what every call would otherwise allocate.
	nameKeys   []string // {name}
	leaseOf    string   // the Lock of its leases' lease.ID
	nameArg    any      // name, boxed once, as a script key
	channelArg any
	tokenArg   any
	forcedArg  any // scripts.ForceUnlocked(name)
	leaseArg   any // the configured lease in ms
	publishArg any
	releaseFn  core.ReleaseFunc // m.release: a method value allocates each time it is taken
	goneFn     lease.Listener   // tells the waiters of a key found gone: made once
	hkey       core.Key
	// fair is a fair lock's waiter list, deadline zset and waiters hash keys.
	fair    []any
	scripts scriptSet
	// contended: a fair lock's last acquisition found it taken, so the
	// next one subscribes before its first try (core.QueueFirst).
	contended atomic.Bool
}

// New returns the Mutex called name on client, without touching Redis.
// Bad arguments (nil client, empty name, a bad option) make every method
// return ErrInvalidArgument, before anything is written.
func New(client redis.UniversalClient, name string, opts ...Option) *Mutex {
	return newMutex(core.ClientOf(client), name, false, opts)
}

func newMutex(client core.Client, name string, fair bool, opts []Option) *Mutex {
	m := &Mutex{client: client, name: name, cfg: core.Apply(newOptions(opts))}
	m.redlockHook = m.redlockNode
	m.releaseFn = m.release
	m.goneFn = lease.LostFunc(func(error) { m.hub.Freed(m.channel, m.cfg.UnlockTimeout) })
	m.hkey = core.NewKey(client, primitive, name, "")
	m.id = errs.Ident{Primitive: primitive, Name: name, Invalid: m.cfg.Check(client.Client, "lock", name)}
	if m.id.Invalid != "" {
		return m
	}
	m.channel = scripts.LockChannel(name)
	m.tokenKey = scripts.Token(name)
	m.hub = core.For(client.Client)
	m.nameKeys = []string{name}
	m.leaseOf = primitive + "\x00" + name
	m.nameArg, m.channelArg, m.tokenArg = name, m.channel, m.tokenKey
	m.forcedArg = scripts.ForceUnlocked(name)
	m.leaseArg = m.cfg.Lease().Milliseconds()
	m.publishArg = m.hub.PublishCommand()
	m.inst = m.cfg.Instruments(primitive, "", name, tracing.SpanReleaseLock)
	m.scripts = plainSet{}
	if fair {
		m.fair = []any{scripts.FairQueue(name), scripts.FairTimeouts(name), scripts.FairWaiters(name)}
		m.scripts = fairSet{queue: m.fair[0], timeouts: m.fair[1], waiters: m.fair[2]}
	}
	return m
}

// Name is the lock's name: the Redis key of its hash.
func (m *Mutex) Name() string {
	if m == nil {
		return ""
	}
	return m.name
}

// Err is why New refused its arguments (the ErrInvalidArgument every call
// then returns), or nil: a service may check its configuration at start-up.
func (m *Mutex) Err() error {
	if err := m.ident().Check("new", context.Background(), unmade); err != nil {
		return err
	}
	return nil
}

// unmade is the identity of a Mutex not made by New (its zero value).
var unmade = errs.Ident{Primitive: primitive, Invalid: "Mutex not made by lock.New"}

// ident is m's identity in errors; a nil *Mutex's refuses every call.
func (m *Mutex) ident() *errs.Ident {
	if m == nil {
		return &nilMutex
	}
	return &m.id
}

var nilMutex = errs.Ident{Primitive: primitive, Invalid: "nil *lock.Mutex"}

// Lock takes the lock, waiting while another owner holds it; ctx bounds
// the wait (so does WithWaitTimeout), not the hold. The returned context
// carries ctx's values, the hold (a nested Lock of this lock on it
// re-enters) and its fencing token, and is done only when this hold ends:
// cause ErrLockLost if the lease was lost, context.Canceled after Unlock;
// with WithHoldScopedToContext, when ctx ends. A grant whose reply came
// after its lease had lapsed is given back as ErrLockLost.
//
// opts override New's for this acquisition, as Redisson's tryLock(wait,
// lease); one that configures the Mutex itself is refused with
// ErrInvalidArgument. A re-entry keeps its hold's lease.
func (m *Mutex) Lock(ctx context.Context, opts ...LockOption) (context.Context, error) {
	a, req, err := m.prepare(ctx, "lock", false, opts)
	if err != nil {
		return nil, err
	}
	err = core.Acquire(ctx, m.trace(a), req)
	return m.held(ctx, "lock", a, err)
}

// TryLock makes one attempt: ErrNotAcquired when another owner holds the
// lock; otherwise as Lock. An attempt the server cannot run yet (BUSY,
// LOADING, a failover's READONLY) is resent until the unlock timeout or
// ctx ends, and then TryLock returns that reply.
func (m *Mutex) TryLock(ctx context.Context, opts ...LockOption) (context.Context, error) {
	a, req, err := m.prepare(ctx, "trylock", true, opts)
	if err != nil {
		return nil, err
	}
	err = core.Acquire(ctx, m.trace(a), req)
	return m.held(ctx, "trylock", a, err)
}

// prepare checks an acquisition's input and makes its attempt and request.
func (m *Mutex) prepare(ctx context.Context, op string, once bool, opts []LockOption) (*attempt, core.Request, error) {
	if err := m.ident().Check(op, ctx, unmade); err != nil {
		return nil, core.Request{}, err
	}
	cfg, bad := m.cfg.PerCall(primitive, lockOptions(opts))
	if bad != "" {
		return nil, core.Request{}, m.id.Refuse(op, bad)
	}
	// Re-entry is per lock: only a hold of this lock in ctx lends its owner.
	ownerID, ok := core.OwnerOf(ctx, m.key())
	if !ok {
		ownerID = core.Mint()
	}
	wd := m.cfg.Watchdog
	a := &attempt{m: m, cfg: cfg, owner: ownerID, ownerArg: ownerID, wd: wd, lease: cfg.Lease(), leaseID: lease.ID{Lock: m.leaseOf, Owner: ownerID}, mode: scripts.ModeMinted}
	var existing *lease.Lease // a minted owner has none
	if ok {
		existing = wd.Find(m.client.Client, a.leaseID)
	}
	if existing != nil {
		a.lease = existing.Timeout() // a re-entry keeps the hold's lease: Redis's TTL must be what the watchdog tracks
	}
	if existing != nil || ok {
		// Other holds of this process share the owner: only a latch tells
		// a second run of this acquisition from theirs.
		a.mode = scripts.ModeLatch
		a.latch = core.RequestKey(scripts.AcquireLatch(m.name)) // off the common path: built here
	}
	channel, seated := m.scripts.seat(m, a, once)
	req := core.Request{
		Hub:      m.hub,
		Channel:  channel,
		Wait:     cfg.WaitTimeout,
		Fallback: a.lease,
		Owner:    ownerID,
		Attempt:  a,
		Client:   m.client,
		Patience: cfg.UnlockTimeout,
		Watchdog: wd,
	}
	switch {
	case once:
		req.Entry = core.SingleTry
	case existing != nil:
		req.Entry = core.Reenter
	case seated && m.contended.Load():
		req.Entry = core.QueueFirst
	}
	if existing == nil && !once {
		a.ctx = ctx
		req.HandOff = a
	}
	return a, req, nil
}

// trace is how core.Acquire traces and measures a's acquisition.
func (m *Mutex) trace(a *attempt) core.Trace {
	return core.Trace{Tracer: m.inst.Tracer, Name: tracing.SpanAcquireLock, Start: m.inst.SpanStart, Lease: a.lease, Metrics: m.inst.Metrics}
}

// held returns the hold's context, or err (from core.Acquire) wrapped for op.
func (m *Mutex) held(ctx context.Context, op string, a *attempt, err error) (context.Context, error) {
	if err != nil {
		if a.cfg.HolderLabel != "" && errors.Is(err, ErrNotAcquired) {
			err = core.NameHolders(ctx, m.client, err, m.heldBy)
		}
		return nil, m.id.Wrap(op, err)
	}
	return a.held, nil
}

// Keep makes the hold of an acquisition that acquired (core.Attempt).
func (a *attempt) Keep(ctx context.Context, traced bool) error {
	if a.mark > 0 {
		a.m.hub.ReturnSeat(a.m.channel, a.seat, true)
	}
	var err error
	a.held, err = a.m.newHold(ctx, a, traced)
	return err
}

// attempt is one acquire's state, and the claim a local release hands to.
type attempt struct {
	m        *Mutex
	cfg      *core.Config    // New's, or this acquisition's own (Lock's opts)
	ctx      context.Context // the caller's, for a Discard
	held     context.Context // the hold's, once kept
	owner    string
	ownerArg any             // owner, boxed once
	wd       *lease.Watchdog // sentAt is on its clock
	lease    time.Duration
	leaseID  lease.ID

	// mode and latch let a second run of the script return the first's grant.
	mode  any
	latch string
	// uncertain: a try failed after its script may have run.
	uncertain bool
	// mark is a fair waiter's mark life (0: no place in the list); queued:
	// a try put it there; seat: its id in the list.
	mark   time.Duration
	queued bool
	seat   string
	tried  bool

	count, token int64
	sentAt       time.Time
	late         <-chan struct{} // closed when a try the caller left returns
}

// Took reads a try's reply (core.Attempt): whether it left a place in
// line or a grant to give back, and the hold's count and token.
func (a *attempt) Took(ctx context.Context, r core.Reply, err error, _ bool) (core.Result, error) {
	a.sentAt = r.SentAt
	late, mayHaveRun := core.Lost(err)
	if late != nil {
		a.late = late // what it may take is given back after it
	}
	c, tok, ttl := r.Count, r.Token, r.TTL
	// In line: waiting, requeued for want of replicas, or maybe, after a
	// lost reply (a withdrawal is safe either way).
	a.queued = a.queued || (a.mark > 0 && ((err == nil && c == 0) || errors.Is(err, ErrNotReplicated) || mayHaveRun))
	// A lost reply may hide a grant, even if a later try took the lock:
	// a give-back finds the hold or nothing.
	a.uncertain = a.uncertain || mayHaveRun
	if a.mark > 0 && err == nil {
		// Taken, or free at the first try: how the next acquisition starts.
		if c == 0 || !a.tried {
			a.m.contended.Store(c == 0)
		}
		a.tried = true
	}
	if err != nil || c == 0 {
		return core.Result{TTL: ttl}, err
	}
	a.count, a.token = c, tok
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		span.SetAttributes(tracing.Reentrant.Bool(c > 1), tracing.FencingToken.Int64(tok))
	}
	return core.Result{Acquired: true}, nil
}

// Abandon cleans up after an acquisition that gave up (core.Attempt): it
// leaves the line, gives back what a lost reply may hide, returns the seat.
func (a *attempt) Abandon(ctx context.Context, _ error) {
	m := a.m
	// A try still in flight withdraws in giveBack, after it lands.
	left := a.queued && (a.late != nil || m.withdraw(ctx, a.owner, a.seat) != nil)
	if a.uncertain {
		m.giveBack(ctx, a)
	}
	if a.mark > 0 {
		// A place that may be left in the list goes with its seat.
		m.hub.ReturnSeat(m.channel, a.seat, !left && !a.uncertain)
	}
}

// Granted takes the lock a release handed over: a local one, sent at
// g.SentAt, or a remote one that gave the hold a provisional TTL (g.TTL),
// counted as if it started with the last try so the watchdog renews at once.
func (a *attempt) Granted(g core.Grant) {
	a.count, a.token = 1, g.Token
	if !g.SentAt.IsZero() {
		a.sentAt = g.SentAt
		return
	}
	a.sentAt = a.sentAt.Add(-max(a.lease-g.TTL, 0))
}

// Declines is core.Claimant's: a local hand-over writes no WAIT, which a's
// own replica sync may need whatever the releasing Mutex's config.
func (a *attempt) Declines(ctx context.Context) bool {
	return scripts.SyncNeeded(ctx, a.m.client.Client, a.cfg.ReplicaPolicy(), a.m.name)
}

// Discard gives back a lock handed over as the acquire gave up (to the
// next waiter, if any), bounded by the unlock timeout.
func (a *attempt) Discard(core.Grant) {
	_, _ = a.m.releaseLast(context.WithoutCancel(a.ctx), a.owner, a.lease, a.m.cfg.UnlockTimeout, true, nil)
}

// FencingToken returns the fencing token of the innermost hold ctx carries:
// a number that grows with every acquisition (Redisson RFencedLock's
// counter), for a store to reject writes from a holder that lost the lock.
func FencingToken(ctx context.Context) (int64, bool) { return core.Token(ctx) }

func (m *Mutex) key() core.Key {
	if m == nil {
		return core.Key{}
	}
	return m.hkey
}

func (m *Mutex) newHold(ctx context.Context, a *attempt, traced bool) (context.Context, error) {
	spec := lease.Spec{
		Renewer:   renewer,
		Targets:   []lease.Target{{Client: m.client.Client, Keys: m.nameKeys, Arg: a.ownerArg}},
		Timeout:   a.lease,
		Renew:     a.cfg.Renewed(),
		ID:        a.leaseID,
		Name:      m.name,
		Primitive: primitive,
		Token:     a.token,
		Sync:      a.cfg.ReplicaPolicy(),
		Gone:      m.goneFn,
	}
	// A re-entry shares the outer hold's lease, label, kept key and notice.
	if a.count == 1 {
		m.addKeys(ctx, a, &spec)
	}
	ls := core.Lease(m.cfg.Watchdog, spec, a.count > 1, a.mode == scripts.ModeMinted, a.sentAt)
	var taken any
	if a.count == 1 && a.cfg.ForceUnlockNotice {
		extra := &holdExtras{}
		m.watch(ctx, extra, ls, a.owner)
		taken = extra
	}
	return core.Start(ctx, m.key(), &core.Hold{Owner: a.owner, Token: a.token, Lease: ls, Taken: taken, Telemetry: m.inst.Release, Traced: traced, Scoped: a.cfg.ScopedHold, Live: &m.holds, Reentry: a.count > 1}, m.releaseFn)
}

// Unlock releases one count of the hold ctx carries; at zero the lock is
// freed and waiters woken, or handed to this process's next waiter. It runs
// on its own timeout, even when ctx is done. It returns ErrNotHeld when ctx
// carries no live hold of this lock, nil when the hold was released as its
// acquiring context ended, and an error matching ErrLockLost if it was lost.
func (m *Mutex) Unlock(ctx context.Context) error {
	if err := m.ident().Check("unlock", ctx, unmade); err != nil {
		return err
	}
	return m.id.Wrap("unlock", core.End(ctx, m.key(), &m.holds))
}

// release gives one count back to Redis. The last count stops the lease
// first, so no renewal is sent after release returns.
func (m *Mutex) release(ctx context.Context, h *core.Hold) error {
	extra, _ := h.Taken.(*holdExtras)
	extra.unwatch() // before the unlock message this release publishes
	var res int64
	var err error
	if h.Lease.Release() {
		res, err = m.releaseLast(ctx, h.Owner, h.Lease.Timeout(), m.cfg.UnlockTimeout, true, h.Lease)
	} else {
		res, err = m.runUnlock(ctx, h.Owner, h.Lease.Timeout(), m.cfg.UnlockTimeout)
	}
	// Released whole: the label goes too, whichever count was the last.
	if r := h.Lease.Renewer(); res >= 1 && (r == labeledRenewer || r == labeledKeptRenewer) { // 2: released, waiters not told
		core.DropLabel(ctx, m.client.Client, m.name, h.Owner)
	}
	return core.Released(res, err, h.Lease, "the lock was no longer held in Redis")
}

// releaseLast gives back the process's last count, without a latch: to
// the local queue's head if passOn allows, else freeing the lock. Whether
// held (the hold's lease, or nil) may have lapsed decides what a retry that
// finds nothing means. If Redis holds more counts, runUnlock decrements.
func (m *Mutex) releaseLast(ctx context.Context, ownerID string, leaseTime, timeout time.Duration, passOn bool, held *lease.Lease) (int64, error) {
	var res int64
	var err error
	var room [1]*core.Waiter
	var ws []*core.Waiter
	yield := false
	// A hand-over writes the grant with no WAIT after it: with replicas, the
	// next waiter takes the lock with a try of its own.
	handOff := passOn && !scripts.SyncNeeded(ctx, m.client.Client, m.cfg.ReplicaPolicy(), m.name)
	if handOff {
		if res, ran, err := m.scripts.handOver(ctx, m, ownerID, timeout, held); ran {
			if err != nil || res != -2 {
				return res, err
			}
			return m.runUnlock(ctx, ownerID, leaseTime, timeout)
		}
		ws, yield = m.hub.Reserve(m.channel, core.Pick{Head: true}, room[:0])
	}
	if len(ws) == 1 {
		res, err = m.runTransfer(ctx, ws[0], ws[0].Claimant().(*attempt), ownerID)
	} else {
		reply := m.scripts.unlockLast(ctx, m, ownerID).Retrying(ctx, m.client.Client, timeout)
		res, err = reply.Int64()
		if err == nil && res == -3 {
			// Field gone, no loss shown: an earlier run whose reply was lost
			// released a live hold; without a hold (a give-back, a member's
			// release), only a resend of ours says so.
			res = -1
			if (held != nil && !held.Lapsed()) || (held == nil && reply.Retried) {
				res = 1
			}
		}
		if err == nil && res >= 1 && !yield {
			m.hub.Release(m.channel)
		}
	}
	if err != nil || res != -2 {
		return res, err
	}
	return m.runUnlock(ctx, ownerID, leaseTime, timeout)
}

// runUnlock runs the unlock script until it answers or timeout passes,
// with one latch key so a retry never decrements twice: 1 released, 0
// counts remain (lease re-applied), -1 not held.
func (m *Mutex) runUnlock(ctx context.Context, ownerID string, lease, timeout time.Duration) (int64, error) {
	latch := core.RequestKey(scripts.UnlockLatch(m.name)) // off the common path: built here
	res, err := m.scripts.unlock(ctx, m, latch, ownerID, lease, timeout).Retrying(ctx, m.client.Client, timeout).Int64()
	if err == nil && res >= 1 {
		m.hub.Release(m.channel)
	}
	return res, err
}

// runTransfer frees ownerID's last count and hands the lock to w in one
// script: 1 handed over, -1 not held, -2 more counts held (nothing done).
func (m *Mutex) runTransfer(ctx context.Context, w *core.Waiter, next *attempt, ownerID string) (int64, error) {
	sentAt := next.wd.Now()
	vals, err := transferLua{
		Lock: m.nameArg, TokenCounter: m.tokenArg,
		Owner: ownerID, NextOwner: next.owner, NextLeaseMS: next.m.msArg(next.lease),
	}.call().Retrying(ctx, m.client.Client, m.cfg.UnlockTimeout).Int64Slice()
	switch {
	case err != nil:
		w.End(core.Refused, core.Grant{})
		return 0, err
	case len(vals) != 2:
		w.End(core.Refused, core.Grant{})
		return 0, fmt.Errorf("unexpected reply %v", vals)
	case vals[0] == 1:
		w.End(core.Handed, core.Grant{Token: vals[1], SentAt: sentAt})
		return 1, nil
	}
	w.End(core.Refused, core.Grant{})
	return vals[0], nil
}

// msArg is lease in ms as a script argument, boxed once for the default.
func (m *Mutex) msArg(lease time.Duration) any {
	if lease == m.cfg.Lease() {
		return m.leaseArg
	}
	return lease.Milliseconds()
}

// redlockHook is embedded under this name, so that the Mutex is a
// redlock.Member without an exported method.
type redlockHook = core.MemberHook

// redlockNode returns the Mutex as a member of a Redlock, which drives it
// for one owner across all members.
func (m *Mutex) redlockNode() (core.Member, error) {
	if err := m.ident().Check("redlock", context.Background(), unmade); err != nil {
		return core.Member{}, err
	}
	if m.cfg.HolderLabel != "" || m.cfg.ForceUnlockNotice {
		return core.Member{}, m.id.Refuse("redlock", "a Redlock member keeps no holder label nor force-unlock notice (its Redlock drives it)")
	}
	return core.Member{
		Name:    m.name,
		Kind:    primitive,
		Addr:    m.client.Addr(),
		Client:  m.client,
		Given:   m.cfg.Given,
		Key:     m.key(),
		Reenter: []core.Key{m.key()},
		TTL:     m.TTL,
		Try: func(ctx context.Context, ownerID string, lease time.Duration) (bool, int64, time.Duration, error) {
			a := &attempt{m: m, cfg: &m.cfg, owner: ownerID, ownerArg: ownerID, seat: ownerID, lease: lease, mode: scripts.ModeNone}
			r, err := a.Send(ctx, false)
			return r.Count > 0, r.Token, r.TTL, err
		},
		Release: func(ctx context.Context, ownerID string, timeout time.Duration) (bool, error) {
			// releaseLast tells a last count from a re-entered owner's.
			res, err := m.releaseLast(ctx, ownerID, m.cfg.Lease(), timeout, false, nil)
			return res != -1, err
		},
		Renewal: func(ownerID string) lease.Target {
			return lease.Target{Renewer: renewer, Client: m.client.Client, Keys: []string{m.name}, Arg: ownerID}
		},
	}, nil
}
