package rwlock

// AcquireScriptSources are the read and write acquire scripts as sent to
// Redis, for tests that tell them apart in a command hook.
func AcquireScriptSources() []string { return []string{readAcquire.Source(), writeAcquire.Source()} }
