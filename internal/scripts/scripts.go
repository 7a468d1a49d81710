package scripts

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Script is one Lua script.
type Script struct {
	name string
	rs   *redis.Script
}

// Load reads file from fsys (an embed.FS) and returns its Script. A missing
// file is a programming error, so it panics at package init, never on input.
func Load(fsys fs.FS, file string) *Script {
	src, err := fs.ReadFile(fsys, file)
	if err != nil {
		panic(fmt.Sprintf("relock/scripts: %v", err))
	}
	return &Script{name: file, rs: redis.NewScript(string(src))}
}

// Name is the file the script came from.
func (s *Script) Name() string { return s.name }

// Hash is the script's SHA1, as EVALSHA takes it.
func (s *Script) Hash() string { return s.rs.Hash() }

// Run executes the script with EVALSHA, falling back to EVAL on NOSCRIPT.
func (s *Script) Run(ctx context.Context, c redis.Scripter, keys []string, args ...any) *redis.Cmd {
	return s.rs.Run(ctx, c, keys, args...)
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
// that keep their answer in a latch key) may be run this way.
func (s *Script) RunRetrying(ctx context.Context, c redis.Scripter, timeout time.Duration, keys []string, args ...any) *redis.Cmd {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	backoff := 5 * time.Millisecond
	for {
		cmd := s.rs.Run(ctx, c, keys, args...)
		err := cmd.Err()
		if err == nil || !retryable(err) {
			return cmd
		}
		select {
		case <-ctx.Done():
			return cmd
		case <-time.After(backoff):
		}
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
