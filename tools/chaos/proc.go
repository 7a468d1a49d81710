package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// proc is one child process the run owns: a redis-server, a Sentinel or a
// worker. It can be paused, killed and started again with the same
// arguments (a restarted server keeps its port, so clients and proxies
// find it again). Each start puts the child in a process group of its own,
// so that a kill reaches whatever it forked, and asks the kernel to kill it
// should this process die first.
type proc struct {
	name string
	bin  string
	args []string
	argv func(inc int) []string // when set, the arguments of each start
	env  []string
	dir  string
	log  string

	mu      sync.Mutex
	cmd     *exec.Cmd
	exited  chan struct{}
	stopped bool // SIGSTOPped and not yet continued
	starts  int  // how many times it was started: the incarnation
	onExit  func(p *proc, inc int, at time.Time)
}

// start runs the process once more. It returns the incarnation number.
func (p *proc) start() (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil && !isClosed(p.exited) {
		return 0, fmt.Errorf("start %s: already running", p.name)
	}
	out, err := os.OpenFile(p.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return 0, fmt.Errorf("start %s: %w", p.name, err)
	}
	defer out.Close() // the child holds its own descriptor
	args := p.args
	if p.argv != nil {
		args = p.argv(p.starts)
	}
	cmd := exec.Command(p.bin, args...)
	cmd.Dir, cmd.Stdout, cmd.Stderr = p.dir, out, out
	cmd.Env = append(os.Environ(), p.env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("start %s: %w", p.name, err)
	}
	inc := p.starts
	p.starts++
	exited := make(chan struct{})
	p.cmd, p.exited, p.stopped = cmd, exited, false
	// Reaped in the background; the goroutine ends with the process, which
	// kill and the run's cleanup make sure of.
	go func() {
		_ = cmd.Wait()
		if p.onExit != nil {
			p.onExit(p, inc, time.Now())
		}
		close(exited)
	}()
	return inc, nil
}

func isClosed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// signal sends sig to the child's process group.
func (p *proc) signal(sig syscall.Signal) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || isClosed(p.exited) {
		return fmt.Errorf("signal %s: not running", p.name)
	}
	switch sig {
	case syscall.SIGSTOP:
		p.stopped = true
	case syscall.SIGCONT:
		p.stopped = false
	}
	if err := syscall.Kill(-p.cmd.Process.Pid, sig); err != nil {
		return fmt.Errorf("signal %s %v: %w", p.name, sig, err)
	}
	return nil
}

// kill SIGKILLs the group (continuing it first is not needed: SIGKILL
// ends a stopped process too) and waits until it is reaped.
func (p *proc) kill() {
	p.mu.Lock()
	cmd, exited := p.cmd, p.exited
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	<-exited
}

// terminate asks the process to end (SIGTERM, after SIGCONT in case it is
// paused) and kills it when it has not within grace.
func (p *proc) terminate(grace time.Duration) {
	p.mu.Lock()
	cmd, exited := p.cmd, p.exited
	p.mu.Unlock()
	if cmd == nil || isClosed(exited) {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGCONT)
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(grace):
		p.kill()
	}
}

// waitAddr polls until addr accepts a connection or d passes.
func waitAddr(addr string, d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			return c.Close()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not answering after %v: %w", addr, d, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// pid is the process's pid in its current incarnation (0: not started).
func (p *proc) pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || p.cmd.Process == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// freePort returns a loopback port nobody listens on now.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("free port: %w", err)
	}
	defer l.Close()
	addr, ok := l.Addr().(*net.TCPAddr)
	if !ok {
		return 0, errors.New("free port: not a TCP address")
	}
	return addr.Port, nil
}
