package election

import (
	"embed"

	"github.com/relock-go/relock/internal/scripts"
)

// The package's scripts and their typed wrappers, whose fields are KEYS
// then ARGV as each file's header names them (a test holds them to it).

//go:embed lua/*.lua
var luaFS embed.FS

var (
	electScript    = scripts.Load(luaFS, "lua/elect.lua", scripts.Checks)
	resignScript   = scripts.Load(luaFS, "lua/resign.lua", scripts.Checks)
	proclaimScript = scripts.Load(luaFS, "lua/proclaim.lua", scripts.Checks)
	leaderScript   = scripts.Load(luaFS, "lua/leader.lua")
)

// electLua lays out a call of lua/elect.lua.
type electLua struct {
	Lock, Record, Channel string
	Owner                 string
	Epoch                 int64
	Value, Publish        string
}

func (s electLua) call() scripts.Call {
	return electScript.With(3, s.Lock, s.Record, s.Channel, s.Owner, s.Epoch, s.Value, s.Publish)
}

// resignLua lays out a call of lua/resign.lua.
type resignLua struct {
	Record, Channel string
	Owner           string
	Epoch           int64
	Publish         string
}

func (s resignLua) call() scripts.Call {
	return resignScript.With(2, s.Record, s.Channel, s.Owner, s.Epoch, s.Publish)
}

// proclaimLua lays out a call of lua/proclaim.lua: elect.lua's keys and arguments.
type proclaimLua electLua

func (s proclaimLua) call() scripts.Call {
	return proclaimScript.With(3, s.Lock, s.Record, s.Channel, s.Owner, s.Epoch, s.Value, s.Publish)
}

// leaderLua lays out a call of lua/leader.lua.
type leaderLua struct {
	Lock, Record string
}

func (s leaderLua) call() scripts.Call {
	return leaderScript.With(2, s.Lock, s.Record)
}
