//go:build !(aix || darwin || dragonfly || freebsd || linux || netbsd || openbsd || solaris || zos || windows)

package main

import "os"

// isTerminal is false where no terminal can be told from a file: unlock
// then refuses to run without --yes.
func isTerminal(*os.File) bool { return false }
