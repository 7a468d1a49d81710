package redistest

import (
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// Miniredis starts an embedded miniredis and returns it with a go-redis client
// pointed at it. Both are closed at t.Cleanup, the client first.
func Miniredis(t testing.TB) (*miniredis.Miniredis, *redis.Client) {
	t.Helper()
	mr, err := miniredis.Run()
	if err != nil {
		t.Fatalf("redistest: start miniredis: %v", err)
		return nil, nil
	}
	t.Cleanup(mr.Close)

	client := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	// Cleanups run last-in first-out, so the client closes before the server.
	t.Cleanup(func() { _ = client.Close() })
	return mr, client
}

// Env is one test environment: a client and the server behind it. Exactly one
// of Mini and Server is set.
type Env struct {
	Client *redis.Client
	// Mini is the embedded server; nil on a real redis-server.
	Mini *miniredis.Miniredis
	// Server is the real redis-server process; nil on miniredis.
	Server *Server
}

// FastForward lets d pass for the server's TTLs. Miniredis keeps TTLs on a
// virtual clock that only moves when told, so it is moved by d; a real
// redis-server expires keys on its own clock, so the caller sleeps for d.
func (e *Env) FastForward(d time.Duration) {
	if e.Mini != nil {
		e.Mini.FastForward(d)
		return
	}
	time.Sleep(d)
}

// Backend names a kind of server and builds a fresh Env on it.
type Backend struct {
	Name string
	New  func(t testing.TB) *Env
}

// Backends returns the backends a behaviour suite runs on: "miniredis" and
// "redis" (a fresh redis-server process per New, so subtests never share
// state). The "redis" backend fails or skips per [RequireRedisServer].
func Backends() []Backend {
	return []Backend{
		{
			Name: "miniredis",
			New: func(t testing.TB) *Env {
				t.Helper()
				mr, client := Miniredis(t)
				return &Env{Client: client, Mini: mr}
			},
		},
		{
			Name: "redis",
			New: func(t testing.TB) *Env {
				t.Helper()
				s := StartServer(t)
				if s == nil { // only with a testing.TB whose Fatalf returns
					return nil
				}
				return &Env{Client: s.Client(t), Server: s}
			},
		},
	}
}
