package scripts

import (
	"context"
	"crypto/sha1"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/relock-go/relock/internal/clock"
	"github.com/relock-go/relock/internal/conn"
)

// Script is one Lua script.
type Script struct {
	name string
	hash any // boxed once: EVALSHA's argument
	src  any // EVAL's
}

// Lib is Lua shared by scripts (one cannot include another): Load prepends it.
type Lib struct{ src string }

//go:embed lua/*.lua
var libFS embed.FS

// NewLib reads a Lib from fsys (an embed.FS); a missing file panics.
func NewLib(fsys fs.FS, file string) Lib { return Lib{src: mustRead(fsys, file)} }

// Checks defines may (the ACL checks made before a script's first write),
// run (planned writes, checked, then run) and tell (a refusable publish).
var Checks = Lib{src: mustRead(libFS, "lua/acl.lua")}

// Tokens defines fence(counter key), drawing a lock's next token,
// max(counter + 1, server µs), kept FenceTTL (draw then keep, for a script
// that reads first); and, for an acquisition that may run twice, granted
// and last (the token kept in its latch, an earlier run's, the
// last drawn).
var Tokens = Lib{src: mustRead(libFS, "lua/fence.lua")}

// Fence is Checks and Tokens, for a script that asks the ACL first.
var Fence = Lib{src: Checks.src + "\n" + Tokens.src}

// FenceTTL is how long a fencing counter outlives its lock's last
// acquisition (lua/fence.lua's PX): how far back the server's clock may
// step, across a lost counter, before a token could repeat.
const FenceTTL = time.Hour

// Load returns the Script of file from fsys (an embed.FS), after libs. A
// missing file panics, at package init.
func Load(fsys fs.FS, file string, libs ...Lib) *Script {
	var src string
	for _, l := range libs {
		src += l.src + "\n"
	}
	src += mustRead(fsys, file)
	sum := sha1.Sum([]byte(src))
	return &Script{name: file, hash: hex.EncodeToString(sum[:]), src: src}
}

func mustRead(fsys fs.FS, file string) string {
	src, err := fs.ReadFile(fsys, file)
	if err != nil {
		panic(fmt.Sprintf("relock/scripts: %v", err))
	}
	return string(src)
}

// Name is the file the script came from.
func (s *Script) Name() string { return s.name }

// Source is the Lua sent to Redis: the libs, then the file.
func (s *Script) Source() string { return s.src.(string) }

// Hash is the script's SHA1, as EVALSHA takes it.
func (s *Script) Hash() string { return s.hash.(string) }

// Call is one run of a script, its keys then its arguments in one
// allocation, sent once by Run, Retrying, Synced or Cmd: sends write into
// its arguments, which Retrying's late sends go on reading.
type Call struct {
	s     *Script
	nkeys int
	a     []any
}

// With is the call of s with argv, the nkeys keys then the arguments.
func (s *Script) With(nkeys int, argv ...any) Call {
	return Call{s: s, nkeys: nkeys, a: evalArgs(argv)}
}

// Run runs the call with EVALSHA through the client's conn.Pipe, falling
// back to EVAL on NOSCRIPT: Synced with no replica policy.
func (call Call) Run(ctx context.Context, c conn.Client) conn.Reply {
	cmd, _ := call.Synced(ctx, c, ReplicaPolicy{})
	return cmd
}

// evalArgs is argv behind room for the command, the script and nkeys.
func evalArgs(argv []any) []any { return append(make([]any, 3, 3+len(argv)), argv...) }

// Unreachable has a cluster client reload its slot map when err may mean
// a node failed over (see conn.Client.Refresh).
func Unreachable(ctx context.Context, c conn.Client, err error) {
	// err first (before IsReply's rerr, which escapes): no allocation on success
	if err != nil && !conn.IsReply(err) && conn.Transient(err) {
		c.Refresh(ctx)
	}
}

// Cmd is the call's EVALSHA for a caller's own pipeline (every script goes
// through Cmd or Run); on NOSCRIPT the caller sends Reload's command.
func (call Call) Cmd(ctx context.Context) conn.Cmd {
	call.a[0], call.a[1], call.a[2] = "evalsha", call.s.hash, call.nkeys
	return newCmd(ctx, call.nkeys, call.a)
}

// Reload is the EVAL that replaces cmd, the script's EVALSHA, when the
// server's cache lacks the script; it loads it for later calls.
func (s *Script) Reload(ctx context.Context, cmd conn.Cmd) conn.Cmd {
	a := slices.Clone(cmd.Args())
	a[0], a[1] = "eval", s.src
	nkeys, _ := a[2].(int)
	return newCmd(ctx, nkeys, a)
}

func newCmd(ctx context.Context, nkeys int, a []any) conn.Cmd {
	key := 0
	if nkeys > 0 {
		key = 3 // the cluster client routes by the first key
	}
	return conn.NewCmd(ctx, key, a...)
}

// IsNoScript reports whether err is Redis's NOSCRIPT reply.
func IsNoScript(err error) bool {
	msg, ok := conn.ReplyText(err)
	return ok && strings.HasPrefix(msg, "NOSCRIPT")
}

// Reply is a script's reply after Call.Retrying: Retried reports that it
// was sent more than once (an earlier send may have run).
type Reply struct {
	conn.Reply
	Retried bool
}

// Retrying runs the call as Run does, resending while conn.Resend says so
// for twice timeout, whatever ctx's cancellation. The caller waits as
// conn.CallerWait says, then gets a *conn.LateError while the call goes on
// (a conn.Detached ctx waits to the end). Only idempotent scripts (an
// answer kept in a latch, which lives core.LatchLife, or an effect they
// can tell) may run this way.
func (call Call) Retrying(ctx context.Context, c conn.Client, timeout time.Duration) Reply {
	rc := retryCalls.Get().(*retryCall)
	rc.call, rc.c, rc.window = call, c, 2*timeout // how long the retries go on
	stop, wait := conn.CallerWait(ctx, timeout)
	rc.ctx = stop
	if stop.Done() != nil { // else stop keeps ctx's values and never ends already
		rc.ctx = context.WithoutCancel(ctx)
	}
	pool := conn.PoolFor(c)
	if conn.IsDetached(ctx) {
		wait = rc.window // work nobody else waits for ends with its retries
	} else if pool.Inline(stop) {
		// The first attempt on the caller's goroutine under a deadline wait
		// away (conn.Pool.Inline); the retries go on as from a worker.
		sent := time.Now()
		ictx, cancel := context.WithTimeout(rc.ctx, wait)
		cmd, _ := call.Synced(ictx, c, ReplicaPolicy{}) // Run, one frame shallower
		cancel()
		if err := cmd.Err(); err == nil || !(conn.Resend(err) || errors.Is(err, context.DeadlineExceeded)) {
			return rc.done(Reply{Reply: cmd})
		}
		rc.retried = true // the attempt may have run
		wait = max(wait-time.Since(sent), time.Nanosecond)
	}
	if err := pool.Bound(stop, wait, rc.run); err != nil {
		return Reply{Reply: conn.Failed(ctx, err), Retried: true} // rc is the late call's now
	}
	return rc.done(Reply{Reply: rc.cmd, Retried: rc.retried})
}

// retryCall is one Call.Retrying, reused through retryCalls unless late.
type retryCall struct {
	call    Call
	c       conn.Client
	ctx     context.Context
	run     func() // rc.exec, taken once
	window  time.Duration
	cmd     conn.Reply
	retried bool
}

var retryCalls = sync.Pool{New: func() any {
	rc := &retryCall{}
	rc.run = rc.exec
	return rc
}}

// done puts rc back for reuse and returns r.
func (rc *retryCall) done(r Reply) Reply {
	*rc = retryCall{run: rc.run}
	retryCalls.Put(rc)
	return r
}

// exec runs the script until it answers or rc.window passes. The first
// attempt has no deadline of its own (the client's timeouts bound it),
// which spares the common call a timer.
func (rc *retryCall) exec() {
	rc.cmd, _ = rc.call.Synced(rc.ctx, rc.c, ReplicaPolicy{})
	if err := rc.cmd.Err(); err == nil || !conn.Resend(err) {
		return
	}
	rc.retried = true
	ctx, cancel := context.WithTimeout(rc.ctx, rc.window)
	defer cancel()
	for backoff := 5 * time.Millisecond; clock.Sleep(ctx, backoff); backoff = min(2*backoff, 200*time.Millisecond) {
		rc.cmd, _ = rc.call.Synced(ctx, rc.c, ReplicaPolicy{})
		if err := rc.cmd.Err(); err == nil || !conn.Resend(err) {
			return
		}
	}
}

// TTL turns a PTTL reply into the primitives' TTL: 0 for a missing key
// (the lock is free), -1 for one without an expiry.
func TTL(d time.Duration) time.Duration {
	switch {
	case d == -2*time.Nanosecond || d == -2*time.Millisecond:
		return 0
	case d < 0:
		return -1
	}
	return d
}

// The modes of the acquire scripts (ARGV, boxed once): how a second run
// of one acquisition, after a lost reply, is told from another.
var (
	ModeMinted any = "minted" // the owner was made for this acquisition
	ModeLatch  any = "latch"  // through the acquire latch
	ModeNone   any = ""       // not: the caller counts runs (a Redlock member)
)
