//go:build faults && linux

// Process-level faults: a lock holder that is a real child process (the
// program in ./holder) is SIGKILLed, or stalled with SIGSTOP (fencing_test.go).
// Linux only: SIGSTOP/SIGCONT semantics and Pdeathsig (children die with the
// test binary) are what these tests rest on.

package faults

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/internal/scripts"
	"github.com/relock-go/relock/internal/testkit/redistest"
	"github.com/relock-go/relock/lock"
	"github.com/relock-go/relock/rwlock"
	"github.com/relock-go/relock/semaphore"
)

const (
	// procKillLease is the holder's watchdog timeout in the SIGKILL test:
	// short to keep the suite bounded, long enough (renewed every 500 ms)
	// that a busy 2-core VM does not make the live holder lose it.
	procKillLease = 1500 * time.Millisecond
	// procClockSlack absorbs millisecond rounding of PTTL and permit scores
	// and any slew between Redis's clock and ours (one machine). It is the
	// only slack on the lower bound, which is the safety property.
	procClockSlack = 10 * time.Millisecond
	// procLateSlack is how much later than kill+lease the resource may come
	// back: generous, for a loaded machine (the poll, the scripts, the
	// scheduler).
	procLateSlack = 4 * time.Second
	// procFresh is how close to a full lease the holder's remaining lease
	// must be when it is killed: the kill follows a renewal at once, so
	// that "kill time + lease" is (nearly) when the lease really ends.
	procFresh = 100 * time.Millisecond
	// procPoll is the test's TryLock/TryAcquire cadence.
	procPoll = 10 * time.Millisecond
	// procExpectTimeout bounds the wait for a line from the holder (it
	// starts a race-instrumented binary and connects to Redis first).
	procExpectTimeout = 20 * time.Second
)

// procBuildHolder builds ./holder into t.TempDir() and returns its path.
// Once per top-level test (no TestMain here to remove a shared binary);
// the second build is a link from the build cache. The holder is built
// with -race when this test binary is, so the library also runs under the
// race detector in the child.
func procBuildHolder(t *testing.T) string {
	t.Helper()
	bin := t.TempDir() + "/holder"
	args := []string{"build", "-o", bin}
	if procRaceEnabled() {
		args = append(args, "-race")
	}
	args = append(args, "./holder")
	start := time.Now()
	out, err := exec.Command("go", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	t.Logf("built holder in %v", time.Since(start).Round(time.Millisecond))
	return bin
}

func procRaceEnabled() bool {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	for _, s := range bi.Settings {
		if s.Key == "-race" && s.Value == "true" {
			return true
		}
	}
	return false
}

// procChild is one running holder process.
type procChild struct {
	t      *testing.T
	cmd    *exec.Cmd
	lines  chan string   // stdout, one line each
	exited chan struct{} // closed once the process has been reaped
	stdout procLog
	stderr procLog
}

// procLog is a goroutine-safe record of a child's output.
type procLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *procLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *procLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// procLineWriter hands the child's stdout to the test line by line.
type procLineWriter struct {
	c       *procChild
	partial []byte
}

func (w *procLineWriter) Write(p []byte) (int, error) {
	_, _ = w.c.stdout.Write(p)
	w.partial = append(w.partial, p...)
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			return len(p), nil
		}
		line := string(w.partial[:i])
		w.partial = w.partial[i+1:]
		select {
		case w.c.lines <- line:
		default: // nobody reads that many lines; the log keeps them
		}
	}
}

// procStartHolder runs the holder with args. The process is SIGKILLed (and
// resumed, should it be stopped) and reaped at t.Cleanup, which fails the
// test if it cannot be reaped or if the child's race detector spoke.
func procStartHolder(t *testing.T, bin string, args ...string) *procChild {
	t.Helper()
	c := &procChild{t: t, lines: make(chan string, 256), exited: make(chan struct{})}
	c.cmd = exec.Command(bin, args...)
	c.cmd.Stdout = &procLineWriter{c: c}
	c.cmd.Stderr = &c.stderr
	// The kernel kills the child if the test binary dies (a panic, the
	// -timeout), so no holder outlives a failed run.
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := c.cmd.Start(); err != nil {
		t.Fatalf("start holder: %v", err)
	}
	go func() {
		_ = c.cmd.Wait() // also ends the goroutines copying its output
		close(c.exited)
	}()
	t.Cleanup(func() {
		c.kill()
		select {
		case <-c.exited:
		case <-time.After(10 * time.Second):
			t.Errorf("holder pid %d not reaped 10 s after SIGKILL", c.cmd.Process.Pid)
			return
		}
		// Reaped: the pid no longer names a process of ours.
		if err := syscall.Kill(c.cmd.Process.Pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("holder pid %d still exists after reaping: kill(0) = %v", c.cmd.Process.Pid, err)
		}
		if s := c.stderr.String(); strings.Contains(s, "DATA RACE") {
			t.Errorf("race detected in the holder:\n%s", s)
		}
	})
	return c
}

// kill sends SIGKILL (it also ends a stopped process) unless the child
// has already been reaped.
func (c *procChild) kill() {
	select {
	case <-c.exited:
	default:
		_ = c.cmd.Process.Signal(syscall.SIGKILL)
	}
}

func (c *procChild) signal(sig syscall.Signal) {
	c.t.Helper()
	if err := c.cmd.Process.Signal(sig); err != nil {
		c.t.Fatalf("signal %v to holder: %v\n%s", sig, err, c.output())
	}
}

func (c *procChild) output() string {
	return fmt.Sprintf("holder stdout:\n%s\nholder stderr:\n%s", c.stdout.String(), c.stderr.String())
}

// expect returns the next stdout line that starts with prefix, failing on
// an ERROR line, on the child's exit or after timeout.
func (c *procChild) expect(prefix string, timeout time.Duration) string {
	c.t.Helper()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		select {
		case line := <-c.lines:
			if strings.HasPrefix(line, prefix) {
				return line
			}
			if strings.HasPrefix(line, "ERROR") {
				c.t.Fatalf("holder: %s\n%s", line, c.output())
			}
		case <-c.exited:
			select {
			case line := <-c.lines: // a last line may still be queued
				if strings.HasPrefix(line, prefix) {
					return line
				}
			default:
			}
			c.t.Fatalf("holder exited (%v) before printing %q\n%s", c.cmd.ProcessState, prefix, c.output())
		case <-timer.C:
			c.t.Fatalf("holder printed no %q line within %v\n%s", prefix, timeout, c.output())
		}
	}
}

// procField returns the value of key=value in a holder line ("" if none);
// quoted values are unquoted.
func procField(line, key string) string {
	for _, f := range strings.Fields(line) {
		if v, ok := strings.CutPrefix(f, key+"="); ok {
			if u, err := strconv.Unquote(v); err == nil {
				return u
			}
			return v
		}
	}
	return ""
}

// procLeaseLeft reads from the server how long the holder's hold can still
// block others, and when the question was sent (Redis answers at or after
// that instant, so sent+left is a lower bound of when the hold ends). It
// knows each primitive's layout (README, "How it works"):
//   - lock, rwlock write: the PTTL of the hash;
//   - rwlock read: a writer gets in when the hash expires or when every
//     lease key of the reader has (then it purges the reader), so the
//     smaller of the hash's PTTL and the largest lease key PTTL;
//   - semaphore: the latest permit expiry (zset score, server ms) minus
//     the server's TIME.
//
// 0 means nothing is held any more.
func procLeaseLeft(ctx context.Context, rdb *redis.Client, primitive, name string) (left time.Duration, sent time.Time, err error) {
	sent = time.Now()
	ms := func(v int64) time.Duration {
		if v < 0 { // -2: no key; -1 would be a key without TTL
			return time.Duration(v)
		}
		return time.Duration(v) * time.Millisecond
	}
	switch primitive {
	case "lock", "rwlock-write":
		p, err := rdb.PTTL(ctx, name).Result()
		if err != nil {
			return 0, sent, err
		}
		if p < 0 {
			return max(p, 0), sent, procNoTTL(name, p)
		}
		return p, sent, nil
	case "rwlock-read":
		// One script, so every PTTL is read at one server instant.
		res, err := procReadLeftScript.Run(ctx, rdb, []string{name}, scripts.Suffix(name, "*:rwlock_timeout:*")).Int64Slice()
		if err != nil {
			return 0, sent, err
		}
		hash, last := ms(res[0]), ms(res[1])
		if hash == -1 || last == -1 {
			return 0, sent, fmt.Errorf("a key of rwlock %q has no TTL", name)
		}
		return max(min(hash, last), 0), sent, nil
	case "semaphore":
		res, err := procSemLeftScript.Run(ctx, rdb, []string{scripts.Suffix(name, "permits")}).Int64()
		if err != nil {
			return 0, sent, err
		}
		return max(ms(res), 0), sent, nil
	}
	return 0, sent, fmt.Errorf("unknown primitive %q", primitive)
}

func procNoTTL(name string, p time.Duration) error {
	if p == -1 {
		return fmt.Errorf("key %q has no TTL", name)
	}
	return nil
}

// procReadLeftScript returns {PTTL of the rwlock hash, largest PTTL of the
// readers' lease keys matching ARGV[1]} (-2 when there is none). KEYS on a
// private test server holds a handful of keys.
var procReadLeftScript = redis.NewScript(`
local last = -2
for _, k in ipairs(redis.call('keys', ARGV[1])) do
  local p = redis.call('pttl', k)
  if p > last then last = p end
end
return {redis.call('pttl', KEYS[1]), last}
`)

// procSemLeftScript returns the ms until the latest permit of the zset
// KEYS[1] expires, by server time, or -2 when there is no permit.
var procSemLeftScript = redis.NewScript(`
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local last = redis.call('zrange', KEYS[1], -1, -1, 'withscores')
if #last == 0 then return -2 end
return tonumber(last[2]) - now
`)

// procAwaitRenewal waits until the holder's watchdog has renewed the lease
// (the remaining lease grows) and the lease left is within procFresh of a
// full one, so that a kill right after is a kill right after a renewal.
// It returns that probe's result. It fails if no renewal is seen within
// three leases: the watchdog in the child is not renewing.
func procAwaitRenewal(t *testing.T, rdb *redis.Client, primitive, name string, lease time.Duration) (time.Duration, time.Time) {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(3 * lease)
	prev := time.Duration(-1)
	renewals := 0
	for time.Now().Before(deadline) {
		left, sent, err := procLeaseLeft(ctx, rdb, primitive, name)
		if err != nil {
			t.Fatalf("read the lease of %s %q: %v", primitive, name, err)
		}
		if left == 0 {
			t.Fatalf("%s %q: the live holder's lease is gone", primitive, name)
		}
		// The first probe may follow the acquisition itself; wait for the
		// watchdog to extend the lease at least once.
		if prev >= 0 && left > prev+procFresh/2 {
			renewals++
			if left >= lease-procFresh {
				return left, sent
			}
		}
		prev = left
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("%s %q: no fresh renewal by the holder's watchdog within %v (renewals seen: %d)", primitive, name, 3*lease, renewals)
	return 0, time.Time{}
}

// procAttempt is one try from the test process at the resource the killed
// holder held: it reports whether it got in, and gives back what it got.
// token is the fencing token of what it got, or -1.
type procAttempt func(ctx context.Context) (ok bool, token int64, err error)

// procKillCase is one primitive of TestFaultProcessKilled.
type procKillCase struct {
	primitive string
	args      []string // extra holder flags
	attempt   func(rdb *redis.Client, name string) procAttempt
}

func procKillCases() []procKillCase {
	return []procKillCase{
		{
			primitive: "lock",
			attempt: func(rdb *redis.Client, name string) procAttempt {
				mu := lock.New(rdb, name, lock.WithWatchdogTimeout(procKillLease))
				return func(ctx context.Context) (bool, int64, error) {
					held, err := mu.TryLock(ctx)
					if err != nil {
						return false, -1, err
					}
					tok, _ := lock.FencingToken(held)
					return true, tok, mu.Unlock(held)
				}
			},
		},
		{
			// A crashed reader keeps a writer out until its lease keys end.
			primitive: "rwlock-read",
			attempt: func(rdb *redis.Client, name string) procAttempt {
				rw := rwlock.New(rdb, name, rwlock.WithWatchdogTimeout(procKillLease))
				return func(ctx context.Context) (bool, int64, error) {
					held, err := rw.TryLock(ctx)
					if err != nil {
						return false, -1, err
					}
					tok, _ := rwlock.FencingToken(held)
					return true, tok, rw.Unlock(held)
				}
			},
		},
		{
			// A crashed writer keeps readers out until its lease ends.
			primitive: "rwlock-write",
			attempt: func(rdb *redis.Client, name string) procAttempt {
				rw := rwlock.New(rdb, name, rwlock.WithWatchdogTimeout(procKillLease))
				return func(ctx context.Context) (bool, int64, error) {
					held, err := rw.TryRLock(ctx)
					if err != nil {
						return false, -1, err
					}
					tok, _ := rwlock.FencingToken(held)
					return true, tok, rw.RUnlock(held)
				}
			},
		},
		{
			// The holder takes 3 of 4 permits; 2 fit only once they are back.
			primitive: "semaphore",
			args:      []string{"-size", "4", "-permits", "3"},
			attempt: func(rdb *redis.Client, name string) procAttempt {
				sem := semaphore.New(rdb, name, 4, semaphore.WithWatchdogTimeout(procKillLease))
				return func(ctx context.Context) (bool, int64, error) {
					held, err := sem.TryAcquire(ctx, 2)
					if err != nil {
						return false, -1, err
					}
					return true, -1, sem.Release(held)
				}
			},
		},
	}
}

// TestFaultProcessKilled: a holder process is SIGKILLed right after its
// watchdog renewed its lease. The resource must stay unavailable to others
// until that lease ends on the server (the safety property: a crash does
// not free it early) and must come back soon after (liveness: the crashed
// holder does not block forever). For the lock, an rwlock read hold, an
// rwlock write hold and semaphore permits.
func TestFaultProcessKilled(t *testing.T) {
	bin := procBuildHolder(t)
	for _, tc := range procKillCases() {
		t.Run(tc.primitive, func(t *testing.T) {
			srv := redistest.StartServer(t)
			if srv == nil {
				t.Fatal("no redis-server") // StartServer has failed or skipped already
			}
			rdb := srv.Client(t)
			name := "faults:proc:kill:" + tc.primitive
			try := tc.attempt(rdb, name)
			ctx := context.Background()

			args := append([]string{"-addr", srv.Addr, "-primitive", tc.primitive,
				"-name", name, "-lease", procKillLease.String()}, tc.args...)
			child := procStartHolder(t, bin, args...)
			heldLine := child.expect("HELD", procExpectTimeout)
			holderToken, tokErr := strconv.ParseInt(procField(heldLine, "token"), 10, 64)
			if tc.primitive != "semaphore" && tokErr != nil {
				t.Fatalf("holder line %q: no fencing token: %v", heldLine, tokErr)
			}

			// The hold is real: the test process is kept out while it lives.
			if ok, _, err := try(ctx); ok || !errors.Is(err, lock.ErrNotAcquired) {
				t.Fatalf("try while the holder is alive: got in = %v, err = %v; want ErrNotAcquired", ok, err)
			}

			left, sent := procAwaitRenewal(t, rdb, tc.primitive, name, procKillLease)
			killAt := time.Now()
			child.signal(syscall.SIGKILL)
			<-child.exited
			if ws, ok := child.cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
				t.Fatalf("holder ended with %v, want killed by SIGKILL\n%s", child.cmd.ProcessState, child.output())
			}
			if strings.Contains(child.stdout.String(), "LOST") {
				t.Fatalf("holder lost its hold before it was killed\n%s", child.output())
			}

			// The hold ends no earlier than what the last probe before
			// the kill saw; a renewal still in flight at the kill may have
			// landed since and pushed it later, which a probe now sees.
			end := sent.Add(left)
			if left2, sent2, err := procLeaseLeft(ctx, rdb, tc.primitive, name); err != nil {
				t.Fatalf("read the lease after the kill: %v", err)
			} else if e2 := sent2.Add(left2); e2.After(end) {
				end = e2
			}
			notBefore := end.Add(-procClockSlack)
			notAfter := killAt.Add(procKillLease + procLateSlack)
			t.Logf("killed %v after the probe; lease left at the kill %v (lease %v)",
				killAt.Sub(sent).Round(time.Microsecond), end.Sub(killAt).Round(time.Millisecond), procKillLease)

			attempts := 0
			for {
				ok, tok, err := try(ctx)
				now := time.Now()
				attempts++
				if err != nil && !errors.Is(err, lock.ErrNotAcquired) {
					t.Fatalf("attempt %d: %v", attempts, err)
				}
				if ok {
					t.Logf("back %v after the kill (lease %v), after %d attempts",
						now.Sub(killAt).Round(time.Millisecond), procKillLease, attempts)
					if now.Before(notBefore) {
						t.Errorf("SAFETY: %s %q of the killed holder was taken %v after the kill, %v before its lease ended on the server (lease %v)",
							tc.primitive, name, now.Sub(killAt).Round(time.Millisecond), end.Sub(now).Round(time.Millisecond), procKillLease)
					}
					if tc.primitive != "semaphore" && tok <= holderToken {
						t.Errorf("fencing token after the crash %d, want > the killed holder's %d", tok, holderToken)
					}
					break
				}
				if now.After(notAfter) {
					t.Fatalf("%s %q still unavailable %v after the kill (lease %v, %d attempts)",
						tc.primitive, name, now.Sub(killAt).Round(time.Millisecond), procKillLease, attempts)
				}
				time.Sleep(procPoll)
			}
			procAssertKeysSettled(t, rdb, tc.primitive, name)
		})
	}
}

// procAssertKeysSettled checks that, with every hold released, no key of
// the primitive that represents a hold is left: what remains must be the
// fencing token counter (kept on purpose: tokens must keep increasing), a
// semaphore's size record with nothing used, or a key that expires by
// itself (an unlock latch). The server is the test's own, so every key
// on it belongs to this primitive.
func procAssertKeysSettled(t *testing.T, rdb *redis.Client, primitive, name string) {
	t.Helper()
	ctx := context.Background()
	all, err := rdb.Keys(ctx, "*").Result()
	if err != nil {
		t.Fatalf("KEYS: %v", err)
	}
	for _, k := range all {
		switch {
		case k == scripts.Prefix("redisson_lock_token", name):
			continue
		case primitive == "semaphore" && k == name:
			if used, err := rdb.HGet(ctx, k, "used").Int64(); err != nil || used != 0 {
				t.Errorf("semaphore hash %q: used = %d (%v), want 0 with every permit back", k, used, err)
			}
			continue
		case strings.HasPrefix(k, "redisson_unlock_latch:"):
			if p, err := rdb.PTTL(ctx, k).Result(); err != nil || p <= 0 {
				t.Errorf("unlock latch %q: PTTL %v (%v), want one that expires", k, p, err)
			}
			continue
		}
		typ, _ := rdb.Type(ctx, k).Result()
		p, _ := rdb.PTTL(ctx, k).Result()
		t.Errorf("%s %q: key %q (%s, PTTL %v) left after every hold ended", primitive, name, k, typ, p)
	}
}
