package redistest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

const (
	// defaultStartTimeout bounds the wait for a fresh redis-server to answer.
	defaultStartTimeout = 10 * time.Second
	// stopGrace is how long Stop lets redis-server exit on SIGTERM before
	// it sends SIGKILL. With persistence off, a clean exit takes milliseconds.
	stopGrace = 3 * time.Second
	// startAttempts bounds the retries when the port picked for a server was
	// taken by someone else between picking it and redis-server binding it.
	startAttempts = 5
)

// errPortTaken reports that redis-server could not have the port it was
// given; the start is retried on another port.
var errPortTaken = errors.New("port taken")

// Server is a redis-server process on a loopback port, started by
// [StartServers]. Its methods are safe for concurrent use.
type Server struct {
	// Addr is "127.0.0.1:Port", ready for redis.Options.Addr.
	Addr string
	Port int
	// BusPort is the cluster bus port of a cluster node, 0 otherwise.
	BusPort int
	// Dir is the server's working directory (a t.TempDir): its log file
	// redis-PORT.log and, for a cluster node, nodes-PORT.conf live there.
	Dir string

	bin     string
	args    []string
	timeout time.Duration

	mu     sync.Mutex
	cmd    *exec.Cmd     // the current process; nil before the first start
	exited chan struct{} // closed once the current process has been reaped
}

// ServerOption configures [StartServers].
type ServerOption func(*serverConfig)

type serverConfig struct {
	args         []string
	startTimeout time.Duration
	cluster      bool
	// pickPort chooses a port; tests replace it to provoke bind failures.
	pickPort func() (int, error)
}

// WithArgs appends redis-server command-line arguments, e.g.
// WithArgs("--maxmemory", "10mb"). They come after the defaults, so they
// override them.
func WithArgs(args ...string) ServerOption {
	return func(c *serverConfig) { c.args = append(c.args, args...) }
}

// WithStartTimeout bounds the wait for each server to answer PING
// (default 10 s).
func WithStartTimeout(d time.Duration) ServerOption {
	return func(c *serverConfig) {
		if d > 0 {
			c.startTimeout = d
		}
	}
}

// clusterMode starts the servers as cluster nodes (used by StartCluster).
func clusterMode() ServerOption {
	return func(c *serverConfig) { c.cluster = true }
}

// RequireRedisServer returns the path of redis-server. When it is not on
// PATH the test fails if the CI environment variable is true (so CI never
// passes without running these tests) and is skipped, loudly, otherwise.
func RequireRedisServer(t testing.TB) string {
	t.Helper()
	path, err := exec.LookPath("redis-server")
	if err == nil {
		return path
	}
	if inCI() {
		t.Fatalf("redistest: redis-server not found on PATH and CI=%s: install it "+
			"(run `make test`, which installs it with apt-get as root): %v", os.Getenv("CI"), err)
		return ""
	}
	t.Skipf("SKIPPING: redis-server not found on PATH; run `make test` to install it " +
		"— these tests are NOT counted as passing")
	return ""
}

func inCI() bool {
	ci, err := strconv.ParseBool(strings.TrimSpace(os.Getenv("CI")))
	return err == nil && ci
}

// StartServer starts one redis-server; see [StartServers].
func StartServer(t testing.TB, opts ...ServerOption) *Server {
	t.Helper()
	servers := StartServers(t, 1, opts...)
	if len(servers) == 0 {
		return nil
	}
	return servers[0]
}

// StartServers starts n redis-server processes, each on its own free
// 127.0.0.1 port with persistence off and its own t.TempDir, and returns
// once each answers PING. They are stopped at t.Cleanup.
func StartServers(t testing.TB, n int, opts ...ServerOption) []*Server {
	t.Helper()
	bin := RequireRedisServer(t)
	if bin == "" {
		return nil
	}
	if n < 1 {
		t.Fatalf("redistest: StartServers: n = %d, want >= 1", n)
		return nil
	}
	cfg := serverConfig{startTimeout: defaultStartTimeout, pickPort: freePort}
	for _, o := range opts {
		o(&cfg)
	}

	servers := make([]*Server, 0, n)
	for range n {
		s, err := startServer(bin, t.TempDir(), &cfg)
		if err != nil {
			// The servers already started are stopped by their cleanups.
			t.Fatalf("redistest: %v", err)
			return nil
		}
		t.Cleanup(s.Stop)
		servers = append(servers, s)
	}
	return servers
}

// startServer starts one server in dir, moving to a new port when the one
// picked turns out to be taken.
func startServer(bin, dir string, cfg *serverConfig) (*Server, error) {
	var lastErr error
	for range startAttempts {
		port, err := cfg.pickPort()
		if err != nil {
			return nil, err
		}
		s := &Server{
			Addr:    net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
			Port:    port,
			Dir:     dir,
			bin:     bin,
			timeout: cfg.startTimeout,
		}
		if cfg.cluster {
			// The bus defaults to port+10000, which may be taken or beyond
			// 65535 for an ephemeral port, so it gets a free port of its own.
			if s.BusPort, err = cfg.pickPort(); err != nil {
				return nil, err
			}
		}
		s.args = s.buildArgs(cfg)

		err = s.start()
		if err == nil {
			return s, nil
		}
		s.Stop() // reaps the process whether it exited or hung
		if !errors.Is(err, errPortTaken) {
			return nil, err
		}
		lastErr = err
	}
	return nil, fmt.Errorf("start redis-server: no free port after %d attempts: %w", startAttempts, lastErr)
}

func (s *Server) buildArgs(cfg *serverConfig) []string {
	port := strconv.Itoa(s.Port)
	args := []string{
		"--bind", "127.0.0.1",
		"--port", port,
		"--save", "",
		"--appendonly", "no",
		"--protected-mode", "no",
		"--daemonize", "no",
		"--dir", s.Dir,
		// Named by port so a retry on another port starts a clean log, and
		// a Restart appends to the log of the same server.
		"--logfile", s.logFile(),
	}
	if cfg.cluster {
		args = append(args,
			"--cluster-enabled", "yes",
			"--cluster-config-file", "nodes-"+port+".conf",
			"--cluster-node-timeout", "2000",
			"--cluster-port", strconv.Itoa(s.BusPort),
			// Without it a node learns its own address only from its peers,
			// and CLUSTER SLOTS may briefly report it as "?".
			"--cluster-announce-ip", "127.0.0.1",
		)
	}
	return append(args, cfg.args...)
}

func (s *Server) logFile() string {
	return filepath.Join(s.Dir, "redis-"+strconv.Itoa(s.Port)+".log")
}

// start runs the process and waits until it answers on s.Addr.
func (s *Server) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.spawnLocked(); err != nil {
		return err
	}
	return s.waitReadyLocked()
}

func (s *Server) spawnLocked() error {
	// Output before the log file is open (a bad argument, say) goes to
	// stdout/stderr; an *os.File is handed to the child directly, so no
	// copying goroutine is left behind.
	out, err := os.OpenFile(filepath.Join(s.Dir, "redis-"+strconv.Itoa(s.Port)+".out"),
		os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("redis-server %s: %w", s.Addr, err)
	}
	defer out.Close() // the child holds its own descriptor

	cmd := exec.Command(s.bin, s.args...)
	cmd.Dir = s.Dir
	cmd.Stdout = out
	cmd.Stderr = out
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("redis-server %s: %w", s.Addr, err)
	}
	exited := make(chan struct{})
	// Reaping in the background lets Stop wait with a grace period; the
	// goroutine ends as soon as the process does, which Stop ensures.
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	s.cmd, s.exited = cmd, exited
	return nil
}

// waitReadyLocked polls until the process answers PING, and checks through
// INFO that the answer came from this process and not from a server that
// holds the port while ours failed to bind it.
func (s *Server) waitReadyLocked() error {
	deadline := time.Now().Add(s.timeout)
	pid := s.cmd.Process.Pid
	var lastErr error
	for time.Now().Before(deadline) {
		select {
		case <-s.exited:
			if s.logContains("Address already in use") {
				return fmt.Errorf("redis-server %s: %w", s.Addr, errPortTaken)
			}
			return fmt.Errorf("redis-server %s exited during start: %s\n%s",
				s.Addr, s.cmd.ProcessState, s.logTail())
		default:
		}
		got, err := probe(s.Addr)
		if err == nil {
			if got != pid {
				return fmt.Errorf("redis-server %s: answered by pid %d, not %d: %w",
					s.Addr, got, pid, errPortTaken)
			}
			return nil
		}
		lastErr = err
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("redis-server %s did not answer PING within %v (last error: %v)\n%s",
		s.Addr, s.timeout, lastErr, s.logTail())
}

// probe sends PING and INFO server over a raw connection (no client pool to
// tear down) and returns the process_id the server reports.
func probe(addr string) (int, error) {
	conn, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	// Short, so a port held by something that accepts but never answers
	// does not hide for long that our process already exited; a slow
	// answer only costs another round of the caller's loop.
	if err := conn.SetDeadline(time.Now().Add(250 * time.Millisecond)); err != nil {
		return 0, err
	}
	if _, err := io.WriteString(conn, "*1\r\n$4\r\nPING\r\n*2\r\n$4\r\nINFO\r\n$6\r\nserver\r\n"); err != nil {
		return 0, err
	}
	r := bufio.NewReader(conn)
	line, err := r.ReadString('\n')
	if err != nil {
		return 0, err
	}
	if line != "+PONG\r\n" {
		return 0, fmt.Errorf("PING: %q", strings.TrimSpace(line))
	}
	line, err = r.ReadString('\n')
	if err != nil {
		return 0, err
	}
	if !strings.HasPrefix(line, "$") {
		return 0, fmt.Errorf("INFO: %q", strings.TrimSpace(line))
	}
	size, err := strconv.Atoi(strings.TrimSpace(line[1:]))
	if err != nil || size < 0 {
		return 0, fmt.Errorf("INFO: bad length %q", strings.TrimSpace(line))
	}
	body := make([]byte, size)
	if _, err := io.ReadFull(r, body); err != nil {
		return 0, err
	}
	for l := range strings.SplitSeq(string(body), "\r\n") {
		if v, ok := strings.CutPrefix(l, "process_id:"); ok {
			return strconv.Atoi(v)
		}
	}
	return 0, errors.New("INFO: no process_id")
}

func (s *Server) logContains(substr string) bool {
	for _, name := range []string{s.logFile(), strings.TrimSuffix(s.logFile(), ".log") + ".out"} {
		b, err := os.ReadFile(name)
		if err == nil && strings.Contains(string(b), substr) {
			return true
		}
	}
	return false
}

// logTail returns the end of the server's output and log, for error messages.
func (s *Server) logTail() string {
	var b strings.Builder
	for _, name := range []string{strings.TrimSuffix(s.logFile(), ".log") + ".out", s.logFile()} {
		data, err := os.ReadFile(name)
		if err != nil || len(data) == 0 {
			continue
		}
		if len(data) > 2048 {
			data = data[len(data)-2048:]
		}
		fmt.Fprintf(&b, "--- %s ---\n%s", name, data)
	}
	return b.String()
}

// Client returns a go-redis client for the server, closed at t.Cleanup.
// opts adjust the options before the client is made.
func (s *Server) Client(t testing.TB, opts ...func(*redis.Options)) *redis.Client {
	t.Helper()
	o := &redis.Options{Addr: s.Addr}
	for _, fn := range opts {
		fn(o)
	}
	c := redis.NewClient(o)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// Kill ends the process with SIGKILL, as a crash would, and waits until it
// is gone. It does nothing when the server is not running.
func (s *Server) Kill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.runningLocked() {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGKILL)
	<-s.exited
}

// Vanish kills the server (SIGKILL) and keeps its port taken until the
// test ends, by a listener that closes every connection at once: a client
// fails fast, as against a dead server, and no other server started
// meanwhile (by a test of another package running in parallel, which
// picks free ports too) can take the port and answer for the dead one.
// The server cannot be restarted.
func (s *Server) Vanish(t testing.TB) {
	t.Helper()
	s.Kill()
	l, err := net.Listen("tcp", s.Addr)
	if err != nil {
		t.Fatalf("redistest: hold the port of the killed server %s: %v", s.Addr, err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	t.Cleanup(func() {
		_ = l.Close()
		<-done
	})
}

// Stop ends the process with SIGTERM, then SIGKILL if it has not exited
// after a short grace, and waits until it is gone. It does nothing when the
// server is not running, so it is safe to call more than once.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopLocked()
}

func (s *Server) stopLocked() {
	if !s.runningLocked() {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	timer := time.NewTimer(stopGrace)
	defer timer.Stop()
	select {
	case <-s.exited:
	case <-timer.C:
		_ = s.cmd.Process.Signal(syscall.SIGKILL)
		<-s.exited
	}
}

func (s *Server) runningLocked() bool {
	if s.cmd == nil {
		return false
	}
	select {
	case <-s.exited:
		return false
	default:
		return true
	}
}

// Restart starts the server again on the same port and directory, stopping
// it first if it is running, and waits until it answers PING. Nothing is
// persisted, so it comes back empty (a cluster node keeps its nodes.conf and
// so its place in the cluster). The cleanup registered by StartServers stops
// the new process too.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopLocked()

	var err error
	// The port cannot change (clients point at it), so a bind failure is
	// retried on the same port: the old socket may take a moment to go.
	for range startAttempts {
		if err = s.spawnLocked(); err != nil {
			break
		}
		if err = s.waitReadyLocked(); err == nil {
			return
		}
		s.stopLocked()
		if !errors.Is(err, errPortTaken) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("redistest: restart: %v", err)
}

var (
	portsMu sync.Mutex
	// portsUsed keeps this process from handing out a port twice: a stopped
	// server's port stays reserved for its Restart.
	portsUsed = map[int]bool{}
)

// freePort returns a loopback port that was free a moment ago: the kernel
// picks it for a listener that is closed at once. Another process may take
// it before redis-server binds it; startServer detects that and retries.
func freePort() (int, error) {
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, fmt.Errorf("pick a free port: %w", err)
		}
		addr, ok := l.Addr().(*net.TCPAddr)
		if err := l.Close(); err != nil {
			return 0, fmt.Errorf("pick a free port: %w", err)
		}
		if !ok {
			return 0, fmt.Errorf("pick a free port: unexpected address %v", l.Addr())
		}
		port := addr.Port
		portsMu.Lock()
		used := portsUsed[port]
		portsUsed[port] = true
		portsMu.Unlock()
		if !used {
			return port, nil
		}
	}
	return 0, errors.New("pick a free port: every port offered was already used")
}
