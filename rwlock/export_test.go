package rwlock

// AcquireScriptSources are the read and write acquire scripts as sent to
// Redis, for tests that tell them apart in a command hook.
func AcquireScriptSources() []string { return []string{readAcquire.Source(), writeAcquire.Source()} }

// WriteReleaseSource is the script a writer's release runs (which may hand
// the read lock to local readers).
func WriteReleaseSource() string { return writeRelease.Source() }
