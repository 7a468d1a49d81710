//go:build faults && linux

package faults

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/relock-go/relock/internal/testkit/redistest"
	"github.com/relock-go/relock/lock"
)

// procStallLease is the holder's watchdog timeout in the SIGSTOP test.
const procStallLease = time.Second

// procFenceStore is the resource that lock holders write to: it accepts a
// write only if its fencing token is >= the highest token it has seen.
//
// It is an HTTP server on 127.0.0.1 in the test process rather than a
// Redis key guarded by a Lua script because the fencing check belongs to
// the resource, not to the lock service: a store that shares nothing with
// the Redis that issues the tokens shows that the tokens alone protect it.
// Its history of writes, accepted and rejected, is kept in memory for the
// test to assert on. The holder, once resumed, writes over a fresh
// connection, so nothing of the store's side is paused with it.
type procFenceStore struct {
	srv *httptest.Server

	mu      sync.Mutex
	highest int64
	writes  []procWrite
}

type procWrite struct {
	writer   string
	token    int64
	accepted bool
}

func procNewFenceStore(t *testing.T) *procFenceStore {
	t.Helper()
	s := &procFenceStore{highest: -1}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve)) // 127.0.0.1:0
	t.Cleanup(s.srv.Close)
	return s
}

func (s *procFenceStore) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/write" {
		http.Error(w, "POST /write only", http.StatusNotFound)
		return
	}
	token, err := strconv.ParseInt(r.FormValue("token"), 10, 64)
	if err != nil {
		http.Error(w, "bad token: "+err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ok := token >= s.highest
	s.writes = append(s.writes, procWrite{writer: r.FormValue("writer"), token: token, accepted: ok})
	if !ok {
		http.Error(w, fmt.Sprintf("rejected: token %d < highest %d", token, s.highest), http.StatusConflict)
		return
	}
	s.highest = token
	fmt.Fprintf(w, "accepted: token %d", token)
}

func (s *procFenceStore) history() []procWrite {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]procWrite(nil), s.writes...)
}

// write is the test process's own write, as the new holder.
func (s *procFenceStore) write(t *testing.T, writer string, token int64) int {
	t.Helper()
	// No keep-alive: no idle connection (and its goroutines) outlives the
	// call, for goleak.
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.PostForm(s.srv.URL+"/write", url.Values{"token": {strconv.FormatInt(token, 10)}, "writer": {writer}})
	if err != nil {
		t.Fatalf("write to the store: %v", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

// TestFaultProcessStalled demonstrates the fencing argument with a real
// process pause. A holder process is stopped with SIGSTOP (a GC pause, a
// VM migration) past its lease; its lock expires and the test process
// takes it with a larger fencing token and writes. Then the holder is
// resumed: it must learn at once that its hold is lost (its context done,
// cause ErrLockLost), and the write it attempts anyway with its old token
// must be refused by the store. The stale holder must not disturb the new
// hold either.
func TestFaultProcessStalled(t *testing.T) {
	bin := procBuildHolder(t)
	srv := redistest.StartServer(t)
	if srv == nil {
		t.Fatal("no redis-server") // StartServer has failed or skipped already
	}
	rdb := srv.Client(t)
	store := procNewFenceStore(t)
	name := "faults:proc:stall"
	ctx := context.Background()

	child := procStartHolder(t, bin, "-addr", srv.Addr, "-primitive", "lock", "-name", name,
		"-lease", procStallLease.String(), "-store", store.srv.URL)
	heldLine := child.expect("HELD", procExpectTimeout)
	oldToken, err := strconv.ParseInt(procField(heldLine, "token"), 10, 64)
	if err != nil {
		t.Fatalf("holder line %q: %v", heldLine, err)
	}

	// Pause it mid-hold, its lease freshly renewed by its watchdog, as a
	// long GC pause would.
	procAwaitRenewal(t, rdb, "lock", name, procStallLease)
	stopAt := time.Now()
	child.signal(syscall.SIGSTOP)
	// A renewal in flight at the stop can only make the lease end later.
	left, sent, err := procLeaseLeft(ctx, rdb, "lock", name)
	if err != nil {
		t.Fatalf("read the lease after the stop: %v", err)
	}

	// The new holder waits for the lease of the paused one to end.
	mu := lock.New(rdb, name, lock.WithWatchdogTimeout(5*time.Second), lock.WithWaitTimeout(procStallLease+procLateSlack))
	held, err := mu.Lock(ctx)
	acquiredAt := time.Now()
	if err != nil {
		t.Fatalf("lock while the holder is paused: %v (paused %v ago, lease %v)", err, time.Since(stopAt), procStallLease)
	}
	defer func() {
		if err := mu.Unlock(held); err != nil {
			t.Errorf("unlock the new hold: %v", err)
		}
		procAssertKeysSettled(t, rdb, "lock", name)
	}()
	if end := sent.Add(left); acquiredAt.Before(end.Add(-procClockSlack)) {
		t.Errorf("SAFETY: lock taken %v before the paused holder's lease ended on the server", end.Sub(acquiredAt))
	}
	t.Logf("new holder in %v after the pause (lease %v)", acquiredAt.Sub(stopAt).Round(time.Millisecond), procStallLease)
	newToken, ok := lock.FencingToken(held)
	if !ok || newToken <= oldToken {
		t.Fatalf("new holder's fencing token %d (ok=%v), want > the paused holder's %d", newToken, ok, oldToken)
	}
	if code := store.write(t, "test", newToken); code != http.StatusOK {
		t.Fatalf("the new holder's write (token %d): status %d, want 200", newToken, code)
	}

	// Keep the holder paused a little longer than it takes its lease to
	// lapse by its own monotonic clock too, then resume it.
	if d := time.Until(stopAt.Add(procStallLease + 200*time.Millisecond)); d > 0 {
		time.Sleep(d)
	}
	child.signal(syscall.SIGCONT)
	resumed := child.expect("RESUMED", procExpectTimeout)
	wrote := child.expect("WRITE", procExpectTimeout)
	t.Logf("holder after the resume: %s | %s", resumed, wrote)

	// Its context is already done when it resumes, because the lease
	// lapsed during the pause: the hold's context asks the lease, so the
	// holder does not wait for the watchdog's goroutine to run.
	if procField(resumed, "done_at_resume") != "true" || procField(resumed, "lost") != "true" {
		t.Errorf("resumed holder: %s; want its held context already done at the resume, cause ErrLockLost", resumed)
	}
	// The stale write is fenced off.
	if procField(wrote, "token") != strconv.FormatInt(oldToken, 10) || procField(wrote, "status") != strconv.Itoa(http.StatusConflict) {
		t.Errorf("stale holder's write: %s; want token=%d refused with %d", wrote, oldToken, http.StatusConflict)
	}
	want := []procWrite{{writer: "test", token: newToken, accepted: true}, {writer: "holder", token: oldToken, accepted: false}}
	if got := store.history(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("store history %+v, want %+v", got, want)
	}

	// The stale holder, running again, left the new hold alone.
	if n, err := mu.HoldCount(held); err != nil || n != 1 {
		t.Errorf("new holder's hold count after the stale holder resumed: %d (%v), want 1", n, err)
	}
	if err := context.Cause(held); err != nil {
		t.Errorf("new holder's context ended: %v", err)
	}
	if strings.Contains(child.stderr.String(), "panic") {
		t.Errorf("holder panicked:\n%s", child.output())
	}
}
