package core

import (
	"embed"

	"github.com/relock-go/relock/internal/scripts"
)

// The package's script, and its typed wrapper: a struct whose fields are
// the script's KEYS then its ARGV, in the order and with the names of the
// file's header, so that a call site names what it passes
// (TestEveryScriptWrapperMirrorsItsHeader holds it to the header).

//go:embed lua/*.lua
var luaFS embed.FS

// ForceUnlockScript is the script ForceUnlock runs (tests tell it apart by
// its source).
var ForceUnlockScript = scripts.Load(luaFS, "lua/force_unlock.lua")

// forceUnlockLua lays out a call of lua/force_unlock.lua. PrefixOrPermits
// and Weights are sent only when not "": the keys the kind has (KEYS[3]
// for a lock or an rwlock, KEYS[3] and KEYS[4] for a semaphore).
type forceUnlockLua struct {
	Hash, Channel, PrefixOrPermits, Weights string
	Kind, Publish                           string
}

func (s forceUnlockLua) call() scripts.Call {
	argv := append(make([]any, 0, 6), s.Hash, s.Channel)
	if s.PrefixOrPermits != "" {
		argv = append(argv, s.PrefixOrPermits)
	}
	if s.Weights != "" {
		argv = append(argv, s.Weights)
	}
	nkeys := len(argv)
	return ForceUnlockScript.With(nkeys, append(argv, s.Kind, s.Publish)...)
}
