package lock

import (
	"github.com/relock-go/relock/internal/core"
)

// ScriptSources maps each script's file name (without .lua) to the source
// sent to Redis (its shared libraries included), for tests that tell the
// scripts apart in a command hook.
func ScriptSources() map[string]string {
	return map[string]string{
		"acquire":      acquireScript.Source(),
		"transfer":     transferScript.Source(),
		"unlock_last":  unlockLastScript.Source(),
		"unlock":       unlockScript.Source(),
		"renew":        renewer.Lua.Source(),
		"force_unlock": core.ForceUnlockScript.Source(),
		"fair_acquire": fairAcquireScript.Source(),
	}
}

// FairScriptSources is ScriptSources for a fair lock's release scripts,
// which carry the libraries that serve its first waiter.
func FairScriptSources() map[string]string {
	return map[string]string{
		"unlock_last": fairUnlockLastScript.Source(),
		"unlock":      fairUnlockScript.Source(),
	}
}

// Options wraps the options that optionstest builds for the fuzz tests,
// which share them across primitives.
func Options(opts []core.Option) []Option {
	out := make([]Option, len(opts))
	for i, o := range opts {
		out[i] = newOnly(o)
	}
	return out
}
