package rwlock

import "github.com/relock-go/relock/internal/core"

// AcquireScriptSources are the read and write acquire scripts as sent to
// Redis, for tests that tell them apart in a command hook.
func AcquireScriptSources() []string { return []string{readAcquire.Source(), writeAcquire.Source()} }

// WriteReleaseSource is the script a writer's release runs (which may hand
// the read lock to local readers).
func WriteReleaseSource() string { return writeRelease.Source() }

// Options wraps the options that optionstest builds for the fuzz tests,
// which share them across primitives.
func Options(opts []core.Option) []Option {
	out := make([]Option, len(opts))
	for i, o := range opts {
		out[i] = newOnly(o)
	}
	return out
}

// DowngradeSource is the script Downgrade runs.
func DowngradeSource() string { return downgrade.Source() }

// GiveBackSources are the scripts a give-back runs: what it sends after
// an acquisition whose reply was lost.
func GiveBackSources() []string { return []string{readRelease.Source(), writeRelease.Source()} }
