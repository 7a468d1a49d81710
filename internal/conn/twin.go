package conn

import (
	"context"
	"sync"
	"sync/atomic"
	"weak"

	"github.com/redis/go-redis/v9"
)

// A go-redis client made without ContextTimeoutEnabled ignores a context's
// deadline while it waits for a reply, so a call with a bound would need a
// worker goroutine to return on time. Such a client gets a twin: a clone
// sharing its connection pool (redis.Client.WithTimeout) with
// ContextTimeoutEnabled set. A call of this package with a deadline still
// goes through the client's own hooks, and a hook of this package, the
// innermost, sends it on the twin: it runs on the caller's goroutine and
// ends at its deadline. The user's own calls are sent as before.

// twins holds each default client's twin, weakly: the twin shares the
// client's pool, which refers to the client, so a strong entry would keep
// the client alive. The client keeps it instead, through its hook.
var twins Map[weak.Pointer[twin]]

type twin struct {
	clone *redis.Client // no hooks: go-redis's clone drops them
	mu    sync.Mutex
	hook  atomic.Pointer[twinHook] // the innermost hook that sends on clone
}

// timedKey marks the context of a call to be sent on the twin (a value
// of the context, not a wrapper of the command: the hooks outside
// relock's see the command itself, as a *redis.Cmd).
type timedKey struct{}

// twinHook sends the marked calls on its twin while it is the client's
// innermost hook. Once go-redis builds the chain again (a hook was added
// after it) it steps aside, returning next as it is, and the next marked
// call adds a new one.
type twinHook struct {
	t      *twin
	builds atomic.Int32
}

func (*twinHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (*twinHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (h *twinHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	if h.builds.Add(1) > 1 {
		return next // a hook was added inside this one
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
	// Hooked before it is returned: the hook keeps it alive. Of two racing
	// first calls one twin is kept; the other's hook stays a pass-through.
	t := &twin{clone: clone}
	t.innermost(rdb)
	return weak.Make(t)
}

// innermost makes sure a hook of t is rdb's innermost.
func (t *twin) innermost(rdb *redis.Client) {
	if h := t.hook.Load(); h != nil && h.builds.Load() == 1 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if h := t.hook.Load(); h == nil || h.builds.Load() > 1 {
		h = &twinHook{t: t}
		rdb.AddHook(h)
		t.hook.Store(h)
	}
}

// process sends cmd on rdb; on the twin when ctx has a deadline that rdb
// would not honour.
func process(ctx context.Context, rdb redis.UniversalClient, cmd *redis.Cmd) error {
	c, ok := rdb.(*redis.Client)
	if !ok || c.Options().ContextTimeoutEnabled {
		return rdb.Process(ctx, cmd)
	}
	if _, ok := ctx.Deadline(); !ok {
		return rdb.Process(ctx, cmd)
	}
	t := twins.Get(Client{rdb}, newTwin).Value()
	if t == nil {
		return rdb.Process(ctx, cmd)
	}
	t.innermost(c)
	return rdb.Process(context.WithValue(ctx, timedKey{}, t), cmd)
}
