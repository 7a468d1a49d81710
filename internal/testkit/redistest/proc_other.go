//go:build !linux

package redistest

import "syscall"

// sysProcAttr has no portable way to tie the child's life to ours outside
// Linux; servers are stopped by t.Cleanup.
func sysProcAttr() *syscall.SysProcAttr { return nil }
