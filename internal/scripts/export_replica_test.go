package scripts

import "time"

// SetRefreshEvery sets how long a replica count is trusted, for a test;
// it returns the function that restores it.
func SetRefreshEvery(d time.Duration) (restore func()) {
	old := refreshEvery
	refreshEvery = d
	return func() { refreshEvery = old }
}

var ParseRole = parseRole

// ParseReplicas is parseReplicas: the online replicas, and whether
// another is still syncing.
func ParseReplicas(info string) (online int, pending bool) {
	r := parseReplicas(info)
	return r.online, r.pending
}

var ParseMemory = parseMemory

// ForgetWarnings forgets the warnings given, so that a test sees its own.
func ForgetWarnings() { warned.Clear() }
