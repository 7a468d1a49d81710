package conn

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// DefaultLinger is how long an idle worker waits for another call.
const DefaultLinger = 100 * time.Millisecond

// Pool runs calls on reused goroutines; make one with NewPool. It never
// queues a call (an idle worker or a new goroutine takes it at once), so
// a call that blocks on a stalled server never delays another.
type Pool struct {
	idle      chan func()
	linger    time.Duration
	started   atomic.Uint64
	deadlines bool // the client's calls end at their context's deadline
}

// NewPool returns a Pool whose idle workers end after linger
// (DefaultLinger if linger <= 0).
func NewPool(linger time.Duration) *Pool {
	if linger <= 0 {
		linger = DefaultLinger
	}
	return &Pool{idle: make(chan func()), linger: linger}
}

// Go runs f on a worker of the pool.
func (p *Pool) Go(f func()) {
	select {
	case p.idle <- f: // an idle worker took it
	default:
		p.started.Add(1)
		go p.work(f)
	}
}

func (p *Pool) work(f func()) {
	f()
	t := time.NewTimer(p.linger)
	defer t.Stop()
	for {
		select {
		case f = <-p.idle:
			f()
			t.Reset(p.linger)
		case <-t.C:
			return
		}
	}
}

// Started is how many goroutines the pool has started.
func (p *Pool) Started() uint64 { return p.started.Load() }

func newPool(c Client) *Pool {
	p := NewPool(0)
	p.deadlines = honoursDeadlines(c.rdb)
	return p
}

// honoursDeadlines reports whether c's calls end at their context's
// deadline: go-redis sets read and write deadlines from the context only
// with ContextTimeoutEnabled.
func honoursDeadlines(c redis.UniversalClient) bool {
	switch c := c.(type) {
	case *redis.Client:
		return true // through its twin when it does not itself
	case *redis.ClusterClient:
		return c.Options().ContextTimeoutEnabled
	case *redis.Ring:
		return c.Options().ContextTimeoutEnabled
	}
	return false
}

// Inline reports whether a call under ctx may run on the caller's
// goroutine, bounded by a deadline the client honours: ctx's, or a timeout
// of its own when ctx cannot end. go-redis watches deadlines, not
// cancellation: a ctx that can end without a deadline goes through Bound.
func (p *Pool) Inline(ctx context.Context) bool {
	if p == nil || !p.deadlines {
		return false
	}
	_, dl := ctx.Deadline()
	return dl || ctx.Done() == nil
}

// PoolFor returns client's Pool, shared by every lock on that client, so
// workers are reused across lock values (often made per request).
func PoolFor(client Client) *Pool { return sharedOf(client).pool }
