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

	"github.com/relock-go/relock/internal/conn"
)

// Script is one Lua script.
type Script struct {
	name string
	hash any // boxed once: EVALSHA's argument
	src  any // EVAL's
}

// Lib is Lua shared by several scripts (a script cannot include another):
// Load puts it before the script's own source.
type Lib struct{ src string }

//go:embed lua/*.lua
var libFS embed.FS

// NewLib reads a Lib from fsys (an embed.FS); a missing file panics at
// package init, as in Load.
func NewLib(fsys fs.FS, file string) Lib { return Lib{src: mustRead(fsys, file)} }

// Checks defines may (the permission checks a script makes before its
// first write) and tell (a publish that reports a refusal).
var Checks = Lib{src: mustRead(libFS, "lua/acl.lua")}

// Fence defines fence(counter key), which draws a lock's next fencing
// token: max(counter + 1, server time in µs), kept FenceTTL (or draw, the
// reads, then keep, the write, for a script that reads first); and, for an
// acquisition that may run twice, grant (a token kept in its acquire
// latch), granted (the token an earlier run kept) and last (the token
// last drawn). It includes Checks, which its scripts use too.
var Fence = Lib{src: Checks.src + "\n" + mustRead(libFS, "lua/fence.lua")}

// FenceTTL is how long a fencing counter outlives the last acquisition of
// its lock (the PX that lua/fence.lua writes): how far back the server's
// clock may step, across a lost counter, before a token could repeat.
const FenceTTL = time.Hour

// Load reads file from fsys (an embed.FS), after the libs it uses, and
// returns its Script. A missing file is a programming error, so it panics
// at package init, never on input.
func Load(fsys fs.FS, file string, libs ...Lib) *Script {
	var b strings.Builder
	for _, l := range libs {
		b.WriteString(l.src)
		b.WriteString("\n")
	}
	b.WriteString(mustRead(fsys, file))
	src := b.String()
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

// Call is one run of a script: its nkeys keys, then its arguments, laid
// out by With behind room for the command, the script and nkeys, with
// one allocation (keys a primitive boxed once cost nothing per call). A
// primitive's typed wrapper of a Lua file makes it; the caller chooses
// how it is sent: Run, Retrying, Synced, or Cmd on a pipeline of its own.
// A Call is sent once: its sends write the command into its arguments,
// and Retrying's late sends go on reading them after it returns.
type Call struct {
	s     *Script
	nkeys int
	a     []any
}

// With is the call of s with argv, the nkeys keys then the arguments.
func (s *Script) With(nkeys int, argv ...any) Call {
	return Call{s: s, nkeys: nkeys, a: evalArgs(argv)}
}

// Run runs the call with EVALSHA, falling back to EVAL on NOSCRIPT. The
// EVALSHA goes through the client's conn.Pipe, so concurrent scripts
// share round trips under load.
func (call Call) Run(ctx context.Context, c conn.Client) conn.Reply {
	return call.s.send(ctx, c, call.nkeys, call.a)
}

// evalArgs is argv behind room for the command, the script and nkeys.
func evalArgs(argv []any) []any { return append(make([]any, 3, 3+len(argv)), argv...) }

// send runs the script whose keys and arguments are a[3:].
func (s *Script) send(ctx context.Context, c conn.Client, nkeys int, a []any) conn.Reply {
	a[0], a[1], a[2] = "evalsha", s.hash, nkeys
	cmd := newCmd(ctx, nkeys, a)
	if IsNoScript(conn.PipeFor(c).Process(ctx, cmd)) {
		cmd = s.Reload(ctx, cmd)
		c.Process(ctx, cmd)
	}
	if named := s.named(cmd.Reply().Err(), a); named != nil {
		cmd.SetErr(named)
	}
	Unreachable(ctx, c, cmd.Reply().Err())
	return cmd.Reply()
}

// Unreachable tells a cluster client that err may mean its slot map is
// out of date: a node that does not answer may have failed over, and
// go-redis re-reads the map on its own only after a MOVED (or every
// 10 s), so the calls sent again would keep going to the dead node.
func Unreachable(ctx context.Context, c conn.Client, err error) {
	if err == nil {
		return // before rerr, which escapes: no allocation on success
	}
	if conn.IsReply(err) || !conn.Transient(err) {
		return
	}
	c.Refresh(ctx)
}

// Cmd is the call's EVALSHA command, for a caller that sends it on a
// pipeline of its own; after a NOSCRIPT reply it sends Reload's command in
// its place. Every call of a script goes through Cmd or Run, so NOSCRIPT
// is handled one way everywhere.
func (call Call) Cmd(ctx context.Context) conn.Cmd {
	call.a[0], call.a[1], call.a[2] = "evalsha", call.s.hash, call.nkeys
	return newCmd(ctx, call.nkeys, call.a)
}

// Reload is the EVAL command that replaces cmd, the script's EVALSHA, when
// the server's cache lacks the script (a restart, a failover, SCRIPT
// FLUSH): EVAL loads it, once, so later calls find it again.
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
// was sent more than once (an earlier send may have run without its reply
// arriving).
type Reply struct {
	conn.Reply
	Retried bool
}

// Retrying runs the call as Run does, sending it again while the
// reply may have been lost in the network or Redis asks to try again
// (conn.Resend), for twice timeout from now, regardless of ctx's
// cancellation (only ctx's values are kept). The caller waits for it as
// conn.CallerWait says (timeout, or ctx's deadline when sooner): a call
// still unanswered then goes on in the background, and the reply reports
// a *conn.LateError. A ctx made by conn.Detached (work nobody waits
// for) waits for the retries to their end. A latch a script keeps lives
// core.LatchLife, past the last retry. Only idempotent
// scripts (those that keep their answer in a latch key, or can tell their
// own earlier effect) may be run this way.
func (call Call) Retrying(ctx context.Context, c conn.Client, timeout time.Duration) Reply {
	rc := retryCalls.Get().(*retryCall)
	rc.s, rc.c, rc.nkeys, rc.timeout, rc.a = call.s, c, call.nkeys, timeout, call.a
	stop, wait := conn.CallerWait(ctx, timeout)
	rc.ctx = stop
	if stop.Done() != nil { // else stop keeps ctx's values and never ends already
		rc.ctx = context.WithoutCancel(ctx)
	}
	rc.window = 2 * timeout
	pool := conn.PoolFor(c)
	if conn.IsDetached(ctx) {
		wait = rc.window // work nobody else waits for ends with its retries
	} else if pool.Inline(stop) {
		if reply, done := rc.inline(wait); done {
			return reply
		}
		wait = max(wait-time.Since(rc.sent), time.Nanosecond)
	}
	if err := pool.Bound(stop, wait, rc.run); err != nil {
		return Reply{Reply: conn.Failed(ctx, err), Retried: true} // rc is the late call's now
	}
	reply := Reply{Reply: rc.cmd, Retried: rc.retried}
	*rc = retryCall{run: rc.run}
	retryCalls.Put(rc)
	return reply
}

// inline makes the first attempt on the caller's goroutine, under a
// deadline wait away, which the client honours (conn.Pool.Inline). done
// reports a reply to return; otherwise the attempt may be sent again (the
// deadline passed, or conn.Resend), and the retries go on as from a worker.
func (rc *retryCall) inline(wait time.Duration) (r Reply, done bool) {
	rc.sent = time.Now()
	ictx, cancel := context.WithTimeout(rc.ctx, wait)
	cmd := rc.s.send(ictx, rc.c, rc.nkeys, rc.a)
	cancel()
	if err := cmd.Err(); err == nil || !(conn.Resend(err) || errors.Is(err, context.DeadlineExceeded)) {
		reply := Reply{Reply: cmd}
		*rc = retryCall{run: rc.run}
		retryCalls.Put(rc)
		return reply, true
	}
	rc.retried = true // the attempt may have run
	return Reply{}, false
}

// retryCall is one Call.Retrying, reused through retryCalls when it
// returned in time.
type retryCall struct {
	sent    time.Time // of an inline first attempt
	s       *Script
	c       conn.Client
	ctx     context.Context
	timeout time.Duration
	nkeys   int
	a       []any
	run     func()        // rc.exec, taken once
	window  time.Duration // how long the retries go on
	cmd     conn.Reply
	retried bool
}

var retryCalls = sync.Pool{New: func() any {
	rc := &retryCall{}
	rc.run = rc.exec
	return rc
}}

// exec runs the script until it answers or rc.window (twice the
// timeout) passes: a release its caller stopped waiting for goes on
// through a stall or a busy script somewhat longer than the caller's
// bound. The first attempt
// goes without a deadline of its own (the client's read and write timeouts
// bound it, and the caller's wait is bounded apart), which spares the
// common, successful call a timer.
func (rc *retryCall) exec() {
	rc.cmd = rc.s.send(rc.ctx, rc.c, rc.nkeys, rc.a)
	if err := rc.cmd.Err(); err == nil || !conn.Resend(err) {
		return
	}
	rc.retried = true
	ctx, cancel := context.WithTimeout(rc.ctx, rc.window)
	defer cancel()
	backoff := 5 * time.Millisecond
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		rc.cmd = rc.s.send(ctx, rc.c, rc.nkeys, rc.a)
		if err := rc.cmd.Err(); err == nil || !conn.Resend(err) {
			return
		}
		backoff = min(2*backoff, 200*time.Millisecond)
	}
}

// TTL turns a PTTL reply into what the primitives' TTL returns: 0 for a
// key that does not exist (the lock is free), -1 for one without an
// expiry.
func TTL(d time.Duration) time.Duration {
	switch {
	case d == -2*time.Nanosecond || d == -2*time.Millisecond:
		return 0
	case d < 0:
		return -1
	}
	return d
}

// The modes of the primitives' acquire scripts (ARGV): how a second run of
// one acquisition, after a lost reply, is told from another acquisition
// (boxed once).
var (
	ModeMinted any = "minted" // the owner was made for this acquisition
	ModeLatch  any = "latch"  // through the acquire latch
	ModeNone   any = ""       // not: the caller counts runs (a Redlock member)
)
