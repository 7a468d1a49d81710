package conn

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// Client is the Redis client a primitive was made on, as every other
// package holds it. The zero Client has none (Invalid). Clients Of the
// same client are equal, so a Client may key a map.
type Client struct {
	rdb redis.UniversalClient
	// sh is rdb's entry in the registry, found once by Of so that a call
	// reaches its pipe and workers without a lookup; nil: found on use.
	sh *shared
}

// Of wraps rdb, with its entry in the registry (made at the first meeting).
func Of(rdb redis.UniversalClient) Client {
	c := Client{rdb: rdb}
	if c.Invalid() == "" {
		c.sh = sharedOf(c)
	}
	return c
}

// Invalid returns why c cannot carry a relock primitive, or "".
func (c Client) Invalid() string {
	switch rdb := c.rdb.(type) {
	case nil:
		return "nil redis client"
	case *redis.Client:
		if rdb == nil {
			return "nil redis client"
		}
	case *redis.ClusterClient:
		if rdb == nil {
			return "nil redis client"
		}
	case *redis.Ring:
		// A Ring sends a multi-key script to the shard of its first key and
		// pub/sub to one shard: locks on the other shards would be lost.
		return "*redis.Ring is not supported: use one server or a Redis Cluster"
	}
	return ""
}

// Cluster reports whether c is a Redis Cluster client.
func (c Client) Cluster() bool {
	_, ok := c.rdb.(*redis.ClusterClient)
	return ok
}

// ReadTimeout is how long c waits for a reply (negative: never, which
// go-redis's normalized Options spell 0); ok is false if its kind won't say.
func (c Client) ReadTimeout() (d time.Duration, ok bool) {
	switch rdb := c.rdb.(type) {
	case *redis.Client:
		d = rdb.Options().ReadTimeout
	case *redis.ClusterClient:
		d = rdb.Options().ReadTimeout
	default:
		return 0, false
	}
	if d == 0 {
		d = -1
	}
	return d, true
}

// Addr names c's server(s) for errors.
func (c Client) Addr() string { return addr(c.rdb) }

// Do sends one command, args, routed by args[1] (see keyed).
func (c Client) Do(ctx context.Context, args ...any) Reply {
	return c.Process(ctx, keyed(ctx, args))
}

// Pipelined sends the commands cmds (each as Do takes it) in one round
// trip where the client can, and returns their replies in order.
func (c Client) Pipelined(ctx context.Context, cmds ...[]any) []Reply {
	sent := make([]Cmd, len(cmds))
	for i, args := range cmds {
		sent[i] = keyed(ctx, args)
	}
	c.Exec(ctx, sent...)
	out := make([]Reply, len(cmds))
	for i, cmd := range sent {
		out[i] = cmd.Reply()
	}
	return out
}

// keyed is the command args, routed on a cluster by args[1]: a command
// whose second argument is not its key (INFO, EVAL) must not go this way.
func keyed(ctx context.Context, args []any) Cmd {
	return NewCmd(ctx, min(len(args)-1, 1), args...)
}

// Nil is the error of a Reply for a key or field that does not exist.
var Nil = redis.Nil

// ErrClosed is the error of a call on a closed client.
var ErrClosed = redis.ErrClosed

// Reply is the reply to one command. Each reader returns the command's
// error instead when it failed (Nil for a key that does not exist).
type Reply struct{ cmd *redis.Cmd }

// Failed is a Reply of err, for a command not run or whose reply is lost.
func Failed(ctx context.Context, err error) Reply {
	cmd := redis.NewCmd(ctx)
	cmd.SetErr(err)
	return Reply{cmd}
}

// Err is the command's error, nil when it succeeded.
func (r Reply) Err() error { return r.cmd.Err() }

// Val is the reply as the client decoded it: int64, string, []any, nil,
// and under RESP3 also float64, bool or a map.
func (r Reply) Val() any { return r.cmd.Val() }

// Int64 reads an integer reply.
func (r Reply) Int64() (int64, error) { return r.cmd.Int64() }

// Bool reads an integer reply as a boolean (1: true).
func (r Reply) Bool() (bool, error) { return r.cmd.Bool() }

// Float64 reads a RESP3 double, an integer or a numeric string (ZSCORE).
func (r Reply) Float64() (float64, error) {
	if v, ok := r.cmd.Val().(float64); ok {
		return v, nil // go-redis reads only the other two
	}
	return r.cmd.Float64()
}

// Text reads a string reply.
func (r Reply) Text() (string, error) { return r.cmd.Text() }

// Slice reads an array reply.
func (r Reply) Slice() ([]any, error) { return r.cmd.Slice() }

// Int64Slice reads an array of integers.
func (r Reply) Int64Slice() ([]int64, error) { return r.cmd.Int64Slice() }

// StringSlice reads an array of strings.
func (r Reply) StringSlice() ([]string, error) { return r.cmd.StringSlice() }

// Millis reads a reply of milliseconds (PTTL's) as a duration, sign kept.
func (r Reply) Millis() (time.Duration, error) {
	n, err := r.cmd.Int64()
	return time.Duration(n) * time.Millisecond, err
}

// Time reads TIME's reply.
func (r Reply) Time() (time.Time, error) {
	v, err := r.cmd.Slice()
	if err != nil {
		return time.Time{}, err
	}
	if len(v) == 2 {
		s, err1 := strconv.ParseInt(fmt.Sprint(v[0]), 10, 64)
		us, err2 := strconv.ParseInt(fmt.Sprint(v[1]), 10, 64)
		if err1 == nil && err2 == nil {
			return time.Unix(s, us*1000), nil
		}
	}
	return time.Time{}, fmt.Errorf("unexpected TIME reply %v", v)
}
