package main

import (
	"os"

	"golang.org/x/sys/windows"
)

// isTerminal reports whether f is a console, so that unlock may ask for
// confirmation on it: NUL and pipes have no console mode.
func isTerminal(f *os.File) bool {
	var mode uint32
	return windows.GetConsoleMode(windows.Handle(f.Fd()), &mode) == nil
}
