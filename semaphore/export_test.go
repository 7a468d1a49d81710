package semaphore

// AcquireScriptSource is the acquire script as sent to Redis, for tests
// that tell it apart in a command hook.
func AcquireScriptSource() string { return acquireScript.Source() }

// ReleaseScriptSource is the release script as sent to Redis.
func ReleaseScriptSource() string { return releaseScript.Source() }

// Channel is the semaphore's channel, the name of its local queue.
func (s *Semaphore) Channel() string { return s.channel }
