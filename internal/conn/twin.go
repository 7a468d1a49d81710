package conn

import (
	"context"
	"reflect"
	"sync"
	"sync/atomic"
	"weak"

	"github.com/redis/go-redis/v9"
)

// A go-redis client without ContextTimeoutEnabled ignores a context's
// deadline while it waits for a reply, so it gets a twin: a clone sharing
// its pool (redis.Client.WithTimeout) with ContextTimeoutEnabled. Our
// calls with a deadline pass the client's hooks to ours, the innermost,
// which sends them (pipelines too) on the twin. The user's own calls
// are untouched.

type twin struct {
	clone *redis.Client // no hooks: go-redis's clone drops them
	mu    sync.Mutex
	hook  atomic.Pointer[twinHook] // the innermost hook that sends on clone
}

// timedKey marks the context of a call to send on the twin (not a
// command wrapper: outer hooks must see the *redis.Cmd itself).
type timedKey struct{}

// twinHook sends marked calls on its twin while it is innermost. Once a
// later hook is added it steps aside, and the next marked call adds anew.
// go-redis also builds chains with it for a Conn of the client and for an
// autopipelined command; those add no hook inside it.
type twinHook struct {
	t      *twin
	base   atomic.Uintptr // the code of the client's own process, next at the first build
	dialed atomic.Bool    // DialHook ran: go-redis rebuilds a chain hook by hook, dial first
	stale  atomic.Bool    // a hook was added inside this one
}

func (h *twinHook) DialHook(next redis.DialHook) redis.DialHook {
	h.dialed.Store(true)
	return next
}

// ProcessPipelineHook sends a marked pipeline on the twin. A transaction
// (MULTI first) goes on: the twin's plain pipeline would misread its replies.
func (h *twinHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	if h.stale.Load() { // rebuilt with ProcessHook: a hook was added inside
		return next
	}
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if ctx.Value(timedKey{}) != h.t || len(cmds) == 0 || cmds[0].Name() == "multi" {
			return next(ctx, cmds)
		}
		p := h.t.clone.Pipeline()
		for _, cmd := range cmds {
			_ = p.Process(ctx, cmd)
		}
		_, err := p.Exec(ctx)
		return err
	}
}

func (h *twinHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	at := reflect.ValueOf(next).Pointer()
	h.base.CompareAndSwap(0, at)
	rebuilt := h.dialed.Swap(false)
	if at != h.base.Load() {
		// Another hook inside: added later, if go-redis rebuilds the chain
		// (else it is an autopipelined command's own, which adds none).
		if rebuilt {
			h.stale.Store(true)
		}
		return next
	}
	return func(ctx context.Context, cmd redis.Cmder) error {
		if ctx.Value(timedKey{}) == h.t {
			return h.t.clone.Process(ctx, cmd)
		}
		return next(ctx, cmd)
	}
}

func newTwin(c Client) weak.Pointer[twin] {
	rdb := c.rdb.(*redis.Client)
	opt := rdb.Options()
	clone := rdb.WithTimeout(opt.ReadTimeout)
	clone.Options().WriteTimeout = opt.WriteTimeout
	clone.Options().ContextTimeoutEnabled = true
	// Hooked before it is returned: the hook keeps it alive.
	t := &twin{clone: clone}
	t.innermost(rdb)
	return weak.Make(t)
}

// innermost makes sure a hook of t is rdb's innermost.
func (t *twin) innermost(rdb *redis.Client) {
	if h := t.hook.Load(); h != nil && !h.stale.Load() {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if h := t.hook.Load(); h == nil || h.stale.Load() {
		h = &twinHook{t: t}
		rdb.AddHook(h)
		t.hook.Store(h)
	}
}

// timed is ctx marked to be sent on rdb's twin when ctx has a deadline
// that rdb ignores (go-redis sets deadlines from the context only with
// ContextTimeoutEnabled); else ctx. sh is rdb's entry, nil to look it up.
func timed(ctx context.Context, rdb redis.UniversalClient, sh *shared) context.Context {
	c, ok := rdb.(*redis.Client)
	if !ok || c.Options().ContextTimeoutEnabled {
		return ctx
	}
	if _, ok := ctx.Deadline(); !ok {
		return ctx
	}
	if sh == nil {
		sh = sharedOf(Client{rdb: rdb})
	}
	t := sh.twinOf(c)
	if t == nil {
		return ctx
	}
	t.innermost(c)
	return context.WithValue(ctx, timedKey{}, t)
}

// twinOf returns rdb's twin, made on first use; nil once collected. The
// entry holds it weakly: its pool refers to the client, which would pin
// it. The client keeps it, through its hook.
func (s *shared) twinOf(rdb *redis.Client) *twin {
	s.twinOnce.Do(func() {
		s.twin = newTwin(Client{rdb: rdb})
		s.twinMade.Store(true)
	})
	return s.twin.Value()
}
