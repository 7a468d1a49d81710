package redistest

import (
	"fmt"
	"os/exec"
)

// Launch starts one redis-server on a free 127.0.0.1 port, working in dir
// (which must exist), with the same defaults as [StartServers], and returns
// once it answers PING. It is the entry point for programs without a
// *testing.T, such as the benchmark harness: the caller must call
// [Server.Stop]. It fails when redis-server is not on PATH.
func Launch(dir string, opts ...ServerOption) (*Server, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, fmt.Errorf("redistest: redis-server not found on PATH: %w", err)
	}
	cfg := serverConfig{startTimeout: defaultStartTimeout, pickPort: freePort}
	for _, o := range opts {
		o(&cfg)
	}
	s, err := startServer(bin, dir, &cfg)
	if err != nil {
		return nil, fmt.Errorf("redistest: %w", err)
	}
	return s, nil
}

// Pid returns the process id of the running redis-server, or 0 when it is
// not running (stopped, killed, or exited).
func (s *Server) Pid() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.runningLocked() {
		return 0
	}
	return s.cmd.Process.Pid
}
