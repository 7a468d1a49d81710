package semaphore

import (
	"github.com/relock-go/relock/internal/core"

	"regexp"
	"strconv"
	"time"
)

// AcquireScriptSource is the acquire script as sent to Redis, for tests
// that tell it apart in a command hook.
func AcquireScriptSource() string { return acquireScript.Source() }

// ReleaseScriptSource is the release script as sent to Redis.
func ReleaseScriptSource() string { return releaseScript.Source() }

// Channel is the semaphore's channel, the name of its local queue.
func (s *Semaphore) Channel() string { return s.channel }

// KeySlack is how long a semaphore's keys may outlive its last permit or
// mark: state.lua's slack_ms, read from the script itself.
var KeySlack = func() time.Duration {
	m := regexp.MustCompile(`local slack_ms = (\d+)`).FindStringSubmatch(acquireScript.Source())
	if m == nil {
		panic("state.lua has no slack_ms")
	}
	ms, _ := strconv.Atoi(m[1])
	return time.Duration(ms) * time.Millisecond
}()

// Options wraps the options that optionstest builds for the fuzz tests,
// which share them across primitives.
func Options(opts []core.Option) []Option {
	out := make([]Option, len(opts))
	for i, o := range opts {
		out[i] = newOnly(o)
	}
	return out
}
