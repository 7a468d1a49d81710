package rwlock

// AcquireScriptSources are the read and write acquire scripts as sent to
// Redis, for tests that tell them apart in a command hook.
func AcquireScriptSources() []string { return []string{readAcquire.Source(), writeAcquire.Source()} }

// WriteTransferSource is the script a writer's release runs when it hands
// the read lock to local readers.
func WriteTransferSource() string { return writeTransfer.Source() }
