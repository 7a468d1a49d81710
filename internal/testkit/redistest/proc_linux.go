//go:build linux

package redistest

import "syscall"

// sysProcAttr makes the kernel SIGKILL a redis-server whose parent (the test
// binary) dies, so a test that panics or times out does not leave servers
// running on the machine. Strictly the signal follows the OS thread that
// started the child; Go only ends threads whose goroutine exits while locked
// to them, which test code here does not do.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
