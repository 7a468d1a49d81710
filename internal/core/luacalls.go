package core

import (
	"embed"

	"github.com/relock-go/relock/internal/scripts"
)

// The package's script and its typed wrapper, whose fields are its KEYS
// then ARGV as the file's header names them
// (TestEveryScriptWrapperMirrorsItsHeader checks).

//go:embed lua/*.lua
var luaFS embed.FS

// ForceUnlockScript is the script ForceUnlock runs (tests spot its source).
var ForceUnlockScript = scripts.Load(luaFS, "lua/force_unlock.lua")

// forceUnlockLua lays out a call of lua/force_unlock.lua. PrefixOrPermits
// (KEYS[3]) and Weights (a semaphore's KEYS[4]) are sent only when not "".
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
