package redistest

import (
	"context"
	"net"
	"os"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrReadTimeout is what go-redis returns when a reply does not come in
// time: the command may have run, the caller cannot know it.
var ErrReadTimeout error = &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}

// ScriptFaults is a go-redis hook on the scripts it was made with (their
// EVALSHA hash or EVAL source): with Twice it sends each call twice, as
// go-redis's resend after a read timeout would, Gap after the first (a
// resend comes a read timeout later); the next Lose calls have
// their reply replaced by ErrReadTimeout after Redis ran the script; the
// next Drop calls fail so without reaching Redis (a request lost on its
// way). Seen counts the calls. AfterNext holds up one reply.
type ScriptFaults struct {
	ids   map[any]bool
	Twice bool
	Gap   time.Duration
	Lose  atomic.Int32
	Drop  atomic.Int32
	Seen  atomic.Int32
	after atomic.Pointer[func()]
}

// AfterNext runs fn once, after the next call of f's scripts has run and
// before its reply reaches the caller: with fn moving the watchdog's fake
// clock, a reply that arrives that much later.
func (f *ScriptFaults) AfterNext(fn func()) { f.after.Store(&fn) }

// NewScriptFaults returns a ScriptFaults on the scripts with sources
// srcs; with none, on every script (EVAL and EVALSHA).
func NewScriptFaults(srcs ...string) *ScriptFaults {
	f := &ScriptFaults{ids: map[any]bool{}}
	for _, src := range srcs {
		f.ids[src] = true
		f.ids[redis.NewScript(src).Hash()] = true
	}
	return f
}

// DialHook is go-redis's, unchanged.
func (f *ScriptFaults) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook applies the faults to the calls of f's scripts.
func (f *ScriptFaults) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, c redis.Cmder) error {
		if !f.applies(c) {
			return next(ctx, c)
		}
		if f.Drop.Add(-1) >= 0 {
			f.Seen.Add(1)
			c.SetErr(ErrReadTimeout)
			return ErrReadTimeout
		}
		err := next(ctx, c)
		if err == nil && f.Twice {
			time.Sleep(f.Gap)
			err = next(ctx, c)
		}
		f.Seen.Add(1)
		if fn := f.after.Swap(nil); fn != nil {
			(*fn)()
		}
		if err == nil && f.Lose.Add(-1) >= 0 {
			err = ErrReadTimeout
			c.SetErr(err)
		}
		return err
	}
}

func (f *ScriptFaults) applies(c redis.Cmder) bool {
	args := c.Args()
	if len(f.ids) == 0 {
		return c.Name() == "evalsha" || c.Name() == "eval"
	}
	return len(args) >= 2 && f.ids[args[1]]
}

// ProcessPipelineHook is go-redis's, unchanged: the scripts under test
// are not pipelined.
func (f *ScriptFaults) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
