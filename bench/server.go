package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// server is a redis-server process of the bench's own, on a free loopback
// port, without persistence. The bench is a module of its own, so it
// starts its servers itself rather than through the library's test rigs.
type server struct {
	Addr string
	cmd  *exec.Cmd
	done chan struct{}
}

// launchServer starts redis-server in dir and waits until it answers PING.
// A port taken between picking and binding moves it to another, three times
// at most.
func launchServer(dir string) (*server, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, fmt.Errorf("redis-server not found on PATH: %w", err)
	}
	var lastErr error
	for range 3 {
		s, err := startOn(bin, dir)
		if err == nil {
			return s, nil
		}
		lastErr = err
	}
	return nil, lastErr
}

func startOn(bin, dir string) (*server, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	log, err := os.Create(filepath.Join(dir, "redis-"+strconv.Itoa(port)+".out"))
	if err != nil {
		return nil, err
	}
	defer log.Close()
	cmd := exec.Command(bin, "--bind", "127.0.0.1", "--port", strconv.Itoa(port), "--save", "",
		"--appendonly", "no", "--protected-mode", "no", "--dir", dir)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start redis-server: %w", err)
	}
	s := &server{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(s.done) }()

	c := redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1})
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		err = c.Ping(ctx).Err()
		cancel()
		if err == nil {
			return s, nil
		}
		select {
		case <-s.done:
			return nil, fmt.Errorf("redis-server on port %d exited at start (see %s): %w", port, log.Name(), err)
		default:
		}
		if time.Now().After(deadline) {
			s.Stop()
			return nil, fmt.Errorf("redis-server on port %d: no answer in 10s: %w", port, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Pid is the server's process id, 0 once it has exited.
func (s *server) Pid() int {
	select {
	case <-s.done:
		return 0
	default:
		return s.cmd.Process.Pid
	}
}

// Stop kills the server and waits for it to exit.
func (s *server) Stop() {
	if err := s.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return
	}
	<-s.done
}
