// Package exredis gives the examples a Redis to run against: the server named
// by an environment variable when it is set, otherwise an embedded miniredis.
//
// miniredis expires keys only when told to (FastForward), so an embedded
// server here is given a goroutine that fast-forwards it with the wall clock:
// leases then end on time, as they do on a real server.
package exredis

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// Server is one Redis: a real one named by address, or an embedded miniredis.
type Server struct {
	Addr string
	mr   *miniredis.Miniredis
	stop func()
}

// Embedded reports whether the server is an in-process miniredis.
func (s *Server) Embedded() bool { return s.mr != nil }

// Client returns a new client of the server.
func (s *Server) Client() *redis.Client { return redis.NewClient(&redis.Options{Addr: s.Addr}) }

// Close stops an embedded server (it is gone for its clients, as if killed);
// a real server is left alone.
func (s *Server) Close() {
	if s.mr != nil {
		s.stop()
	}
}

// Start returns the server at addr, or an embedded one when addr is empty.
func Start(addr string) (*Server, error) {
	if addr != "" {
		return &Server{Addr: addr}, nil
	}
	mr, err := miniredis.Run()
	if err != nil {
		return nil, err
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		last := time.Now()
		for {
			select {
			case <-done:
				return
			case now := <-t.C:
				mr.FastForward(now.Sub(last))
				last = now
			}
		}
	})
	var once sync.Once
	stop := func() { once.Do(func() { close(done); wg.Wait(); mr.Close() }) }
	return &Server{Addr: mr.Addr(), mr: mr, stop: stop}, nil
}

// Open returns the server at REDIS_ADDR, or an embedded one, and says which
// on out.
func Open(out io.Writer) (*Server, error) {
	srv, err := Start(os.Getenv("REDIS_ADDR"))
	if err != nil {
		return nil, err
	}
	if srv.Embedded() {
		fmt.Fprint(out, "Using an embedded miniredis (set REDIS_ADDR to use a real Redis).\n\n")
	} else {
		fmt.Fprintf(out, "Using Redis at %s.\n\n", srv.Addr)
	}
	return srv, nil
}

// Connect returns a client of Open's server; the func closes both.
func Connect(out io.Writer) (*redis.Client, func(), error) {
	srv, err := Open(out)
	if err != nil {
		return nil, nil, err
	}
	rdb := srv.Client()
	return rdb, func() { _ = rdb.Close(); srv.Close() }, nil
}

// StartN returns n servers: those listed in REDIS_ADDRS (comma-separated)
// when it is set, otherwise n embedded ones.
func StartN(out io.Writer, n int) ([]*Server, error) {
	addrs := make([]string, n)
	if env := os.Getenv("REDIS_ADDRS"); env != "" {
		addrs = strings.Split(env, ",")
		if len(addrs) != n {
			return nil, fmt.Errorf("REDIS_ADDRS lists %d servers, want %d", len(addrs), n)
		}
		fmt.Fprintf(out, "Using the Redis masters at %s.\n\n", env)
	} else {
		fmt.Fprintf(out, "Using %d embedded miniredis masters (set REDIS_ADDRS=a,b,... to use real ones).\n\n", n)
	}
	servers := make([]*Server, n)
	for i, addr := range addrs {
		s, err := Start(strings.TrimSpace(addr))
		if err != nil {
			for _, s := range servers[:i] {
				s.Close()
			}
			return nil, err
		}
		servers[i] = s
	}
	return servers, nil
}
