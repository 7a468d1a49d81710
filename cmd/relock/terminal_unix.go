//go:build aix || darwin || dragonfly || freebsd || linux || netbsd || openbsd || solaris || zos

package main

import (
	"os"

	"golang.org/x/sys/unix"
)

// isTerminal reports whether f is a terminal, so that unlock may ask for
// confirmation on it. Only a terminal answers the termios ioctl: a
// character device such as /dev/null (the stdin of cron, systemd and
// `ssh host cmd`) does not. golang.org/x/term does the same; x/sys is
// already in the module's graph, x/term would add a module to every
// importer's.
func isTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), ioctlReadTermios)
	return err == nil
}
