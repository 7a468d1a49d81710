package fencecheck

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/relock-go/relock/internal/testkit/redistest"
	"github.com/relock-go/relock/lock"
)

func httpClient() *http.Client {
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
}

// pauseCase is one pause test: the holder's kind and environment, and
// the store the test process (the second holder) writes and reads.
type pauseCase struct {
	kind string
	tx   bool // the holder's transaction begins before the pause
	env  []string
	s    store
}

// runPause starts the first holder in its own process, stops it
// (SIGSTOP) once it holds the lock and is about to write, takes the lock
// in this process once the holder's lease has run out, writes "B", then
// resumes the holder (SIGCONT), which writes "A" with its old token: the
// guard must refuse it and keep "B".
func runPause(t *testing.T, srv *redistest.Server, c pauseCase) {
	ctx := context.Background()
	name := fmt.Sprintf("fencecheck:pause:%s:%d", c.kind, time.Now().UnixNano())
	res := name + ":value"
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), append(c.env, "FENCECHECK_HOLDER="+c.kind, "FENCECHECK_REDIS="+srv.Addr,
		"FENCECHECK_LOCK="+name, "FENCECHECK_RESOURCE="+res, "FENCECHECK_TX="+map[bool]string{true: "1"}[c.tx])...)
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	lines := bufio.NewScanner(stdout)
	line := func() string {
		if !lines.Scan() {
			t.Fatalf("holder said nothing more: %v", lines.Err())
		}
		return lines.Text()
	}
	var tokA int64
	if l := line(); !strings.HasPrefix(l, "ready") || !strings.HasSuffix(l, "held=true") {
		t.Fatalf("holder: %q", l)
	} else {
		fmt.Sscanf(l, "ready %d", &tokA)
	}
	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stoppedAt := time.Now()

	wait, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	mu := lock.New(srv.Client(t), name)
	held, err := mu.Lock(wait) // once the stopped holder's lease has run out
	if err != nil {
		t.Fatalf("second holder: %v", err)
	}
	tokB, _ := lock.FencingToken(held)
	t.Logf("%s: holder A (token %d) stopped; B took the lock %v later with token %d", c.kind, tokA, time.Since(stoppedAt).Round(time.Millisecond), tokB)
	if tokB <= tokA {
		t.Fatalf("B's token %d is not above A's %d", tokB, tokA)
	}
	if err := c.s.write(ctx, res, tokB, "B"); err != nil {
		t.Fatalf("B's write: %v", err)
	}
	if err := mu.Unlock(held); err != nil {
		t.Fatal(err)
	}

	_ = cmd.Process.Signal(syscall.SIGCONT)
	_, _ = io.WriteString(stdin, "go\n")
	result := line()
	t.Logf("%s: holder A resumed: %s", c.kind, result)
	// A SQLite transaction that read before B committed cannot write at
	// all: SQLITE_BUSY_SNAPSHOT (517), a refusal too (see fence.SQL).
	busySnapshot := c.tx && c.kind == "sqlite" && strings.Contains(result, "(517)")
	if !strings.HasPrefix(result, "result stale") && !busySnapshot {
		t.Errorf("the stale holder's write was not refused: %s", result)
	}
	if v, err := c.s.value(ctx, res); err != nil || v != "B" {
		t.Errorf("the store holds %q (%v), want B's", v, err)
	}
}

func TestPauseSQLite(t *testing.T) {
	srv := redistest.StartServer(t)
	for _, tx := range []bool{false, true} {
		t.Run(fmt.Sprintf("tx-before-pause=%v", tx), func(t *testing.T) {
			s, dsn := newSQLite(t)
			runPause(t, srv, pauseCase{kind: "sqlite", tx: tx, env: []string{"FENCECHECK_DSN=" + dsn}, s: s})
		})
	}
}

func TestPausePostgres(t *testing.T) {
	srv := redistest.StartServer(t)
	for _, tx := range []bool{false, true} {
		t.Run(fmt.Sprintf("tx-before-pause=%v", tx), func(t *testing.T) {
			s, dsn := newPostgres(t)
			runPause(t, srv, pauseCase{kind: "postgres", tx: tx, env: []string{"FENCECHECK_DSN=" + dsn}, s: s})
		})
	}
}

func TestPauseRedis(t *testing.T) {
	srv := redistest.StartServer(t)
	runPause(t, srv, pauseCase{kind: "redis", s: newRedisStore(srv.Client(t))})
}

// The HTTP service is backed by the SQL guard here (the interleavings
// back it by the Redis guard).
func TestPauseHTTP(t *testing.T) {
	srv := redistest.StartServer(t)
	sq, _ := newSQLite(t)
	h := newHTTPStore(t, sq.g.Admitter(sq.db))
	runPause(t, srv, pauseCase{kind: "http", env: []string{"FENCECHECK_URL=" + h.srv.URL}, s: h})
}
