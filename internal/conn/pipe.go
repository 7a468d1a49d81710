package conn

import (
	"context"
	"sync"

	"github.com/redis/go-redis/v9"
)

const (
	// defaultSenders is how many commands (or pipelines) of one client may
	// be in flight at once before later ones queue. Fewer batch more (64
	// goroutines alone on their locks: 1.7x the raw floor's pairs/s with
	// two or eight, 1.5x with sixteen, where rueidislock's auto-pipelining
	// passes it), but a queued command waits for a reply, which other
	// traffic of the process makes slow (bench/, the interleaved
	// 64-goroutine table: 0.59 of the floor's pairs/s with two, 0.84 with
	// eight, 0.97 with sixteen). Eight keeps most of both.
	defaultSenders = 8
	// maxBatch bounds one pipeline, so a queue grown under a burst does
	// not become one very long round trip.
	maxBatch = 256
)

// pipes holds the Pipe of each live client: dropped with the client, so
// that clients made per tenant or per request do not pile up.
var pipes Map[*Pipe]

// PipeFor returns the Pipe of client, one per client for the process. Only a
// single-node *redis.Client is batched; other clients (a cluster client
// routes each command to its own node) get a Pipe that sends directly.
func PipeFor(client Client) *Pipe {
	return pipes.Get(client, newPipe)
}

func newPipe(client Client) *Pipe {
	return NewPipe(client, defaultSenders)
}

// Pipe sends the commands of one client. Its methods are safe for
// concurrent use. It reaches the client through a weak reference: the
// pipes registry must not keep it alive.
type Pipe struct {
	client  Ref
	direct  bool
	senders int
	// deadlines: the client honours a context's deadline, which a call
	// that has one relies on for its bound (Pool.Inline).
	deadlines bool

	mu     sync.Mutex
	flying int // senders in flight
	queue  []*call
}

// NewPipe returns a Pipe on client letting senders commands or pipelines be
// in flight at once (at least 1).
func NewPipe(client Client, senders int) *Pipe {
	_, single := client.rdb.(*redis.Client)
	return &Pipe{client: NewRef(client), direct: !single, senders: max(senders, 1), deadlines: honoursDeadlines(client.rdb)}
}

type call struct {
	ctx  context.Context
	cmd  redis.Cmder
	done chan struct{}
	// batch is set on the call at the front of a handed-over queue: it
	// sends them all.
	batch []*call
}

var calls = sync.Pool{New: func() any { return &call{done: make(chan struct{}, 1)} }}

// Process sends cmd and waits for its reply, which it leaves in cmd (as
// Client.Process does), and returns its error. The wait is not cut short by ctx: a command
// that was queued may already be on its way, and its effect (a lock taken)
// must reach the caller. A command sent alone goes with ctx; a pipeline
// goes with its sender's values but without any caller's deadline or
// cancellation, since its replies belong to all of them: the client's
// read and write timeouts bound it. So a command whose ctx has a deadline
// that the client honours is never queued: it is sent alone at once.
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
		return process(ctx, client, cmd)
	}
	if _, bounded := ctx.Deadline(); bounded && p.deadlines {
		// Sent alone, past the senders' limit: a queued call would go in
		// a pipeline, which carries no caller's deadline.
		p.mu.Unlock()
		return process(ctx, client, cmd)
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

// handOver gives the sender's turn to the queue: its front call sends the
// queue as one pipeline; with nobody queued the turn ends.
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

// send runs b as one pipeline and wakes every call of it but the first
// (the sender itself).
func (p *Pipe) send(b []*call) {
	defer func() { // the others are woken even if a hook panics
		for _, c := range b[1:] {
			c.done <- struct{}{}
		}
	}()
	// The pipeline must not fail for the others because the sender's
	// context ended.
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
