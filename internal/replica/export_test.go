package replica

import "time"

// SetRefreshEvery sets how long a replica count is trusted, for a test;
// it returns the function that restores it.
func SetRefreshEvery(d time.Duration) (restore func()) {
	old := refreshEvery
	refreshEvery = d
	return func() { refreshEvery = old }
}

var (
	ParseReplicas = parseReplicas
	ParseRole     = parseRole
)
