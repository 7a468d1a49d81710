package scripts

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/internal/batch"
)

// Script is one Lua script.
type Script struct {
	name string
	rs   *redis.Script
	hash any // boxed once: EVALSHA's argument
	src  any // EVAL's
}

// Load reads file from fsys (an embed.FS) and returns its Script. A missing
// file is a programming error, so it panics at package init, never on input.
func Load(fsys fs.FS, file string) *Script {
	src, err := fs.ReadFile(fsys, file)
	if err != nil {
		panic(fmt.Sprintf("relock/scripts: %v", err))
	}
	rs := redis.NewScript(string(src))
	return &Script{name: file, rs: rs, hash: rs.Hash(), src: string(src)}
}

// Name is the file the script came from.
func (s *Script) Name() string { return s.name }

// Hash is the script's SHA1, as EVALSHA takes it.
func (s *Script) Hash() string { return s.rs.Hash() }

// Run executes the script with EVALSHA, falling back to EVAL on NOSCRIPT.
// On a client (not a pipeline) the EVALSHA goes through the client's
// batch.Pipe, so concurrent scripts share round trips under load.
func (s *Script) Run(ctx context.Context, c redis.Scripter, keys []string, args ...any) *redis.Cmd {
	client, ok := c.(redis.UniversalClient)
	if !ok {
		return s.rs.Run(ctx, c, keys, args...)
	}
	cmd := s.command(ctx, "evalsha", s.hash, keys, args)
	if err := batch.For(client).Process(ctx, cmd); IsNoScript(err) {
		// Not in this server's cache (a restart, a failover, SCRIPT
		// FLUSH): EVAL loads it, once, so later calls find it again.
		cmd = s.command(ctx, "eval", s.src, keys, args)
		_ = client.Process(ctx, cmd)
	}
	return cmd
}

// command builds EVALSHA (or EVAL) with the arguments in one slice, as
// go-redis's own Eval does, but with the hash boxed once.
func (s *Script) command(ctx context.Context, verb string, script any, keys []string, args []any) *redis.Cmd {
	a := make([]any, 0, 3+len(keys)+len(args))
	a = append(a, verb, script, len(keys))
	for _, k := range keys {
		a = append(a, k)
	}
	a = append(a, args...)
	cmd := redis.NewCmd(ctx, a...)
	if len(keys) > 0 {
		cmd.SetFirstKeyPos(3) // the cluster client routes by the first key
	}
	return cmd
}

// EvalSha queues the script on a pipeline. A NOSCRIPT reply is reported by
// IsNoScript; the caller loads the script (Preload) and sends again.
func (s *Script) EvalSha(ctx context.Context, c redis.Scripter, keys []string, args ...any) *redis.Cmd {
	return s.rs.EvalSha(ctx, c, keys, args...)
}

// Preload loads the script into the script cache (of every master on a
// cluster client).
func (s *Script) Preload(ctx context.Context, c redis.Scripter) error {
	return s.rs.Load(ctx, c).Err()
}

// IsNoScript reports whether err is Redis's NOSCRIPT reply.
func IsNoScript(err error) bool {
	var rerr redis.Error
	return err != nil && errors.As(err, &rerr) && strings.HasPrefix(rerr.Error(), "NOSCRIPT")
}

// RunRetrying runs the script like Run, on its own timeout and regardless
// of ctx's cancellation (only ctx's values are kept), retrying while the
// reply may have been lost in the network. Only idempotent scripts (those
// that keep their answer in a latch key, or can tell their own earlier
// effect) may be run this way.
func (s *Script) RunRetrying(ctx context.Context, c redis.Scripter, timeout time.Duration, keys []string, args ...any) *redis.Cmd {
	cmd, _ := s.RunRetried(ctx, c, timeout, keys, args...)
	return cmd
}

// RunRetried is RunRetrying, also reporting whether the script was sent
// more than once (an earlier attempt may have run without its reply
// arriving).
func (s *Script) RunRetried(ctx context.Context, c redis.Scripter, timeout time.Duration, keys []string, args ...any) (cmd *redis.Cmd, retried bool) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	backoff := 5 * time.Millisecond
	for {
		cmd := s.Run(ctx, c, keys, args...)
		err := cmd.Err()
		if err == nil || !retryable(err) {
			return cmd, retried
		}
		select {
		case <-ctx.Done():
			return cmd, retried
		case <-time.After(backoff):
		}
		retried = true
		backoff = min(2*backoff, 200*time.Millisecond)
	}
}

// retryable: the reply may be lost (network, timeout) but Redis did not
// refuse the command.
func retryable(err error) bool {
	var rerr redis.Error
	if errors.As(err, &rerr) || errors.Is(err, redis.Nil) {
		return false
	}
	return !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
}
