package conn

import (
	"context"
	"sync"

	"github.com/redis/go-redis/v9"
)

const (
	// defaultSenders is how many commands (or pipelines) of one client may
	// be in flight before later ones queue. Fewer batch more, but a queued
	// command waits behind the process's other traffic (bench/, 64
	// goroutines: two senders give 1.7x the raw floor alone but 0.59x
	// interleaved; sixteen 1.5x and 0.97x). Eight keeps most of both.
	defaultSenders = 8
	// maxBatch bounds one pipeline, lest a burst make one long round trip.
	maxBatch = 256
)

// PipeFor returns client's Pipe, one per client. Only a single-node
// *redis.Client is batched; other clients get a Pipe that sends directly.
func PipeFor(client Client) *Pipe { return sharedOf(client).pipe }

func newPipe(client Client) *Pipe {
	return NewPipe(client, defaultSenders)
}

// Pipe sends the commands of one client. Its methods are safe for
// concurrent use. It holds the client weakly, so it does not pin it.
type Pipe struct {
	client  Ref
	direct  bool
	senders int
	// deadlines: the client honours a context's deadline (Pool.Inline).
	deadlines bool

	mu     sync.Mutex
	flying int // senders in flight
	queue  []*call

	// sh is the registry entry whose pipe this is (nil for one made by
	// NewPipe): it holds the client's twin.
	sh *shared
}

// NewPipe returns a Pipe on client with up to senders (at least 1) in flight.
func NewPipe(client Client, senders int) *Pipe {
	_, single := client.rdb.(*redis.Client)
	return &Pipe{client: NewRef(client), direct: !single, senders: max(senders, 1), deadlines: honoursDeadlines(client.rdb)}
}

type call struct {
	ctx  context.Context
	cmd  redis.Cmder
	done chan struct{}
	// batch is set on the front call of a handed-over queue, which sends it.
	batch []*call
}

var calls = sync.Pool{New: func() any { return &call{done: make(chan struct{}, 1)} }}

// Process sends cmd, waits for its reply (left in cmd) and returns its
// error. ctx does not cut the wait short: a queued command may already be
// on its way, and its effect (a lock taken) must reach the caller. A
// pipeline carries no caller's deadline or cancellation (its replies are
// everyone's; the client's timeouts bound it), so a command whose ctx has
// a deadline the client honours is never queued but sent alone at once.
func (p *Pipe) Process(ctx context.Context, command Cmd) error {
	cmd := command.c
	client := p.client.redis()
	if client == nil {
		return redis.ErrClosed // collected: no caller holds it
	}
	if p.direct {
		return client.Process(ctx, cmd)
	}
	p.mu.Lock()
	if p.flying < p.senders {
		p.flying++
		p.mu.Unlock()
		defer p.handOver() // even if a hook panics: the turn must pass on
		return client.Process(timed(ctx, client, p.sh), cmd)
	}
	if _, bounded := ctx.Deadline(); bounded && p.deadlines {
		p.mu.Unlock()
		return client.Process(timed(ctx, client, p.sh), cmd)
	}
	c := calls.Get().(*call)
	c.ctx, c.cmd = ctx, cmd
	p.queue = append(p.queue, c)
	p.mu.Unlock()

	<-c.done
	if b := c.batch; b != nil {
		func() {
			defer p.handOver()
			p.send(b)
		}()
	}
	err := cmd.Err()
	c.ctx, c.cmd, c.batch = nil, nil, nil
	calls.Put(c)
	return err
}

// handOver gives the sender's turn to the queue's front call, if any.
func (p *Pipe) handOver() {
	p.mu.Lock()
	if len(p.queue) == 0 {
		p.flying--
		p.mu.Unlock()
		return
	}
	n := min(len(p.queue), maxBatch)
	b := make([]*call, n)
	copy(b, p.queue)
	rest := copy(p.queue, p.queue[n:])
	clear(p.queue[rest:])
	p.queue = p.queue[:rest]
	p.mu.Unlock()
	b[0].batch = b
	b[0].done <- struct{}{}
}

// send runs b as one pipeline and wakes its calls but the sender (b[0]).
func (p *Pipe) send(b []*call) {
	defer func() { // the others are woken even if a hook panics
		for _, c := range b[1:] {
			c.done <- struct{}{}
		}
	}()
	// The sender's context ending must not fail the others' commands.
	ctx := context.WithoutCancel(b[0].ctx)
	client := p.client.redis() // held by the callers waiting in b
	switch {
	case client == nil:
		for _, c := range b {
			c.cmd.SetErr(redis.ErrClosed)
		}
	case len(b) == 1:
		_ = client.Process(ctx, b[0].cmd)
	default:
		pipe := client.Pipeline()
		for _, c := range b {
			_ = pipe.Process(ctx, c.cmd)
		}
		_, _ = pipe.Exec(ctx) // each command carries its own error
	}
}
