package fence_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/relock-go/relock"
	"github.com/relock-go/relock/fence"
)

// post sends a write with token (none when 0) and returns the status and
// the decoded JSON body.
func post(t *testing.T, url string, token int64, header string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader("x"))
	if token > 0 {
		fence.SetToken(req, token)
	}
	if header != "" {
		req.Header.Set(fence.Header, header)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body map[string]any
	b, _ := io.ReadAll(resp.Body)
	_ = json.Unmarshal(b, &body)
	return resp.StatusCode, body
}

func TestMiddlewareRefusesAStaleRequest(t *testing.T) {
	_, _, g := newRedis(t)
	var mu sync.Mutex
	var written []int64
	h := fence.Middleware(g, func(r *http.Request) string { return "doc:" + r.URL.Path })(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, ok := fence.TokenFrom(r.Context())
		if !ok {
			t.Error("no token in the handler's context")
		}
		mu.Lock()
		written = append(written, tok)
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	srv := httptest.NewServer(h)
	defer srv.Close()

	for _, c := range []struct {
		token  int64
		status int
	}{{3, 204}, {3, 204}, {8, 204}, {5, 409}, {8, 204}} {
		status, body := post(t, srv.URL+"/a", c.token, "")
		if status != c.status {
			t.Fatalf("token %d: status %d %v, want %d", c.token, status, body, c.status)
		}
		if status == 409 && (body["error"] != "stale fencing token" || body["resource"] != "doc:/a" || body["token"] != 5.0 || body["highest"] != 8.0) {
			t.Errorf("409 body %v", body)
		}
	}
	if status, _ := post(t, srv.URL+"/b", 5, ""); status != 204 { // another resource
		t.Errorf("another resource's token refused: %d", status)
	}
	if status, _ := post(t, srv.URL+"/a", 0, ""); status != http.StatusPreconditionRequired {
		t.Errorf("no token: %d", status)
	}
	if status, _ := post(t, srv.URL+"/a", 0, "x1"); status != http.StatusBadRequest {
		t.Errorf("bad token: %d", status)
	}
	if got := len(written); got != 5 {
		t.Errorf("handler ran %d times, want 5", got)
	}
}

func TestRequestToken(t *testing.T) {
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	if _, err := fence.RequestToken(r); !errors.Is(err, fence.ErrNoToken) {
		t.Errorf("err = %v", err)
	}
	fence.SetToken(r, 1<<60)
	if tok, err := fence.RequestToken(r); err != nil || tok != 1<<60 {
		t.Errorf("RequestToken = %d, %v", tok, err)
	}
	r.Header.Set(fence.Header, "-2")
	if _, err := fence.RequestToken(r); !errors.Is(err, relock.ErrInvalidArgument) {
		t.Errorf("err = %v", err)
	}
}

type failing struct{}

func (failing) Admit(context.Context, string, int64) error { return errors.New("store down") }

func TestMiddlewareGuardFailureIs503(t *testing.T) {
	srv := httptest.NewServer(fence.Middleware(failing{}, func(*http.Request) string { return "r" })(http.NotFoundHandler()))
	defer srv.Close()
	if status, body := post(t, srv.URL, 1, ""); status != http.StatusServiceUnavailable || body["error"] != "store down" {
		t.Errorf("status %d body %v", status, body)
	}
}
