package conn

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"
)

// Cmd is one command for Pipe.Process, Client.Process or Client.Exec.
// The zero Cmd is no command (Zero).
type Cmd struct{ c *redis.Cmd }

// NewCmd is the command args, routed on a cluster by args[key] (0: no key).
func NewCmd(ctx context.Context, key int, args ...any) Cmd {
	c := redis.NewCmd(ctx, args...)
	if key > 0 {
		c.SetFirstKeyPos(int8(key))
	}
	return Cmd{c}
}

// Zero reports whether c is no command.
func (c Cmd) Zero() bool { return c.c == nil }

// Args are the command's arguments, its name first.
func (c Cmd) Args() []any { return c.c.Args() }

// Reply is the command's reply; read it only after a send.
func (c Cmd) Reply() Reply { return Reply{c.c} }

// SetErr replaces the command's reply with err.
func (c Cmd) SetErr(err error) { c.c.SetErr(err) }

// Process sends cmd on its own and returns its reply.
func (c Client) Process(ctx context.Context, cmd Cmd) Reply {
	_ = c.rdb.Process(timed(ctx, c.rdb, c.sh), cmd.c)
	return cmd.Reply()
}

// Exec sends cmds as one pipeline (on a cluster client, one per node
// they route to); each holds its reply after.
func (c Client) Exec(ctx context.Context, cmds ...Cmd) {
	ctx = timed(ctx, c.rdb, c.sh)
	_, _ = c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, cmd := range cmds {
			_ = p.Process(ctx, cmd.c)
		}
		return nil
	})
}

// ErrNoNode is Node's error for a client kind that does not route keys.
var ErrNoNode = errors.New("relock: client type does not route keys to servers")

// Node returns the client of the server that holds key's slot: c itself
// when c reaches one server, the slot's master on a cluster.
func (c Client) Node(ctx context.Context, key string) (Client, error) {
	switch rdb := c.rdb.(type) {
	case *redis.Client:
		return c, nil
	case *redis.ClusterClient:
		node, err := rdb.MasterForKey(ctx, key)
		if err != nil {
			return Client{}, err
		}
		return Client{rdb: node}, nil
	}
	return Client{}, ErrNoNode
}

// Sentinel reports whether c finds its master through Sentinel.
func (c Client) Sentinel() bool {
	cl, ok := c.rdb.(*redis.Client)
	return ok && cl.Options().Addr == failoverAddr
}

// failoverAddr is the Addr go-redis sets on a NewFailoverClient's options.
const failoverAddr = "FailoverClient"

// Refresh has a cluster client reload its slot map: go-redis does so only
// after a MOVED (or every 10 s), so resends would keep going to a dead node.
func (c Client) Refresh(ctx context.Context) {
	if cc, ok := c.rdb.(*redis.ClusterClient); ok {
		cc.ReloadState(ctx)
	}
}

// IsReply reports whether err holds an error reply (the server was reached).
func IsReply(err error) bool {
	_, ok := ReplyText(err)
	return ok
}

// ReplyText is the error reply err holds ("NOSCRIPT No matching...").
func ReplyText(err error) (string, bool) {
	if err == nil {
		return "", false // before rerr, which escapes: no allocation on success
	}
	var rerr redis.Error
	if !errors.As(err, &rerr) {
		return "", false
	}
	return rerr.Error(), true
}
