package election

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/internal/core"
	"github.com/relock-go/relock/internal/errs"
	"github.com/relock-go/relock/internal/scripts"
	"github.com/relock-go/relock/lock"
	"github.com/relock-go/relock/tracing"
)

const primitive = "election"

// MaxValue bounds a campaign's value: it travels in every change message.
const MaxValue = 64 << 10

// ErrNoLeader (relock.ErrNoLeader) is Leader's error for a vacant election.
var ErrNoLeader = errs.ErrNoLeader

// The sentinels an Election's calls wrap, as in every package.
var (
	ErrNotHeld         = errs.ErrNotHeld
	ErrLockLost        = errs.ErrLockLost
	ErrInvalidArgument = errs.ErrInvalidArgument
)

// Leader is an election's state: who leads, or (the zero Leader) nobody.
type Leader struct {
	Value string    // what the leader campaigned or proclaimed with; "" and Epoch 0 when vacant
	Epoch int64     // strictly increasing across leaderships: the fencing token
	Since time.Time // server time the leadership began
}

// Vacant reports whether l is the state of an election without a leader.
func (l Leader) Vacant() bool { return l.Epoch == 0 }

// Election elects one leader at a time among the candidates that campaign
// under its name. Its methods are safe for concurrent use.
type Election struct {
	id      errs.Ident
	client  core.Client
	name    string
	fair    *lock.Mutex // the candidates' line and the leader's hold
	record  string      // relock_election:{<name>}
	channel string      // relock_election__channel:{<name>}
	cfg     core.Config // as the fair lock reads its options
	hub     *core.Hub
	inst    instruments

	mu      sync.Mutex
	current *term // the leadership Campaign last won here, until it ends
}

// term is one leadership: what its context carries.
type term struct {
	e      *Election
	owner  string
	epoch  int64
	held   context.Context // the fair lock's hold
	endMu  sync.Mutex      // guards ended and stopAF
	ended  bool
	stopAF func() bool // ends the wait for the hold's loss
}

type termKey struct{}

// New returns the election name on client, its candidates in the fair lock
// name (lock.NewFair) and its record at relock_election:{name}. Bad
// arguments make every call (and Err) fail with ErrInvalidArgument.
func New(client redis.UniversalClient, name string, opts ...Option) *Election {
	var lockOpts []lock.Option
	var coreOpts []core.Option
	for _, o := range opts {
		if o != nil {
			lockOpts, coreOpts = append(lockOpts, o.options().lock), append(coreOpts, o.options().core)
		}
	}
	c := core.ClientOf(client)
	e := &Election{client: c, name: name, cfg: core.Apply(coreOpts)}
	e.id = errs.Ident{Primitive: primitive, Name: name}
	e.fair = lock.NewFair(client, name, lockOpts...)
	if err := e.fair.Err(); err != nil {
		// The lock's reason, without the sentinel it is worded under.
		e.id.Invalid, _ = strings.CutPrefix(errs.Reason(err).Error(), ErrInvalidArgument.Error()+": ")
		return e
	}
	e.record = scripts.ElectionRecord(name)
	e.channel = scripts.ElectionChannel(name)
	e.hub = core.For(c.Client)
	e.inst = newInstruments(&e.cfg, name)
	return e
}

// unmade is the identity of an Election not made by New.
var unmade = errs.Ident{Primitive: primitive, Invalid: "Election not made by election.New"}

func (e *Election) ident() *errs.Ident {
	if e == nil {
		return &errs.Ident{Primitive: primitive, Invalid: "nil *election.Election"}
	}
	return &e.id
}

// Err is why New refused its arguments, nil when it did not.
func (e *Election) Err() error { return e.ident().Check("new", context.Background(), unmade) }

// Name is the election's name: the fair lock's.
func (e *Election) Name() string { return e.ident().Name }

// Epoch returns the epoch of the leadership leading carries: its hold's
// fencing token, for a store to refuse a superseded leader's writes.
func Epoch(leading context.Context) (int64, bool) {
	if t := termOf(leading, nil); t != nil {
		return t.epoch, true
	}
	return 0, false
}

// termOf returns the leadership leading carries, of e (any election if nil).
func termOf(leading context.Context, e *Election) *term {
	if leading == nil {
		return nil
	}
	t, ok := leading.Value(termKey{}).(*term)
	if !ok || (e != nil && t.e != e) {
		return nil
	}
	return t
}

func (e *Election) logger() *slog.Logger {
	if e.cfg.Logger != nil {
		return e.cfg.Logger
	}
	return slog.Default()
}

// Leader returns the current leader, or ErrNoLeader when vacant, never a
// leadership whose lease lapsed. Bounded by the unlock timeout.
func (e *Election) Leader(ctx context.Context) (Leader, error) {
	if err := e.ident().Check("leader", ctx, unmade); err != nil {
		return Leader{}, err
	}
	st, err := e.read(ctx)
	if err != nil {
		return Leader{}, e.id.Wrap("leader", err)
	}
	if st.vacant {
		return Leader{}, e.id.Wrap("leader", ErrNoLeader)
	}
	return st.Leader, nil
}

// read runs lua/leader.lua and reads its reply.
func (e *Election) read(ctx context.Context) (state, error) {
	var vals []any
	err := e.client.Within(ctx, e.cfg.UnlockTimeout, func(ctx context.Context) (err error) {
		vals, err = leaderLua{Lock: e.name, Record: e.record}.call().Run(ctx, e.client.Client).Slice()
		return err
	})
	switch {
	case err != nil:
		return state{}, err
	case len(vals) == 0:
		return state{vacant: true}, nil
	case len(vals) != 6:
		return state{}, fmt.Errorf("leader record: %d fields", len(vals))
	}
	var n [5]int64
	for i := range n {
		v, ok := vals[i].(int64)
		if !ok {
			return state{}, fmt.Errorf("leader record: field %d is %T", i+1, vals[i])
		}
		n[i] = v
	}
	value, _ := vals[5].(string)
	return state{
		Leader: Leader{Value: value, Epoch: n[0], Since: time.UnixMilli(n[2])},
		rev:    n[1],
		lease:  time.Duration(n[3]) * time.Millisecond,
		pttl:   time.Duration(n[4]) * time.Millisecond,
	}, nil
}

// Proclaim changes the value of the leadership leading carries, for
// observers and Leader. It returns ErrNotHeld, writing nothing, when that
// leadership has ended or been superseded. Bounded by the unlock timeout.
func (e *Election) Proclaim(leading context.Context, value string) error {
	if err := e.ident().Check("proclaim", leading, unmade); err != nil {
		return err
	}
	if len(value) > MaxValue {
		return e.id.Refuse("proclaim", fmt.Sprintf("value of %d bytes, longer than %d", len(value), MaxValue))
	}
	t := termOf(leading, e)
	if t == nil {
		return e.id.Wrap("proclaim", fmt.Errorf("%w: the context carries no leadership of this election", ErrNotHeld))
	}
	if err := t.held.Err(); err != nil {
		return e.id.Wrap("proclaim", fmt.Errorf("%w: the leadership has ended: %w", ErrNotHeld, context.Cause(t.held)))
	}
	var rev int64
	err := e.client.Within(leading, e.cfg.UnlockTimeout, func(ctx context.Context) (err error) {
		rev, err = proclaimLua{Lock: e.name, Record: e.record, Channel: e.channel,
			Owner: t.owner, Epoch: t.epoch, Value: value, Publish: e.hub.PublishCommand()}.call().Run(ctx, e.client.Client).Int64()
		return err
	})
	if err == nil && rev == 0 {
		err = fmt.Errorf("%w: epoch %d is not the current leadership", ErrNotHeld, t.epoch)
	}
	return e.id.Wrap("proclaim", err)
}

// Resign ends the leadership leading carries (leading is done on return):
// the record goes, observers see a vacancy, the next candidate is elected.
// It returns ErrNotHeld when leading carries no leadership of this election,
// an error matching ErrLockLost when it was lost. Bounded by the unlock timeout.
func (e *Election) Resign(leading context.Context) error {
	if err := e.ident().Check("resign", leading, unmade); err != nil {
		return err
	}
	t := termOf(leading, e)
	if t == nil {
		return e.id.Wrap("resign", fmt.Errorf("%w: the context carries no leadership of this election", ErrNotHeld))
	}
	rerr := resignLua{Record: e.record, Channel: e.channel, Owner: t.owner, Epoch: t.epoch,
		Publish: e.hub.PublishCommand()}.call().Retrying(leading, e.client.Client, e.cfg.UnlockTimeout).Err()
	e.ended(t, tracing.TransitionResigned) // before the release ends the hold, which would count it lost
	uerr := e.fair.Unlock(t.held)
	if rerr != nil && uerr == nil {
		// The next leader writes its record; observers only missed the vacancy.
		e.logger().Warn("relock: election resigned, but its record could not be removed",
			"election", e.name, "epoch", t.epoch, "err", rerr)
	}
	return e.id.Wrap("resign", errs.Reason(uerr))
}

// ended records the end of t once: metrics, and the Election forgets it.
func (e *Election) ended(t *term, how string) {
	t.endMu.Lock()
	done, stop := t.ended, t.stopAF
	t.ended = true
	t.endMu.Unlock()
	if done {
		return
	}
	if stop != nil {
		stop()
	}
	e.mu.Lock()
	if e.current == t {
		e.current = nil
	}
	e.mu.Unlock()
	e.inst.transition(context.Background(), how, -1)
}

// Check reports whether this Election's leadership is healthy, for a
// probe: an error while this process leads and the renewal due at a third
// of the lease has not succeeded by half of it (so the probe fails before
// the lease lapses); nil when renewed in time or when it does not lead.
func (e *Election) Check(ctx context.Context) error {
	if err := e.ident().Check("check", ctx, unmade); err != nil {
		return err
	}
	e.mu.Lock()
	t := e.current
	e.mu.Unlock()
	if t == nil || t.held.Err() != nil {
		return nil
	}
	left, ok := core.Remaining(t.held)
	if ok && e.cfg.Renewed() && left < e.cfg.Lease()/2 {
		return e.id.Wrap("check", fmt.Errorf("leadership of epoch %d not renewed in time: %v of its %v lease left",
			t.epoch, left.Round(time.Millisecond), e.cfg.Lease()))
	}
	return nil
}
