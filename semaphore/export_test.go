package semaphore

// AcquireScriptSource is the acquire script as sent to Redis, for tests
// that tell it apart in a command hook.
func AcquireScriptSource() string { return acquireScript.Source() }
