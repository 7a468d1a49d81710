package election

import (
	"context"
	"embed"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/internal/scripts"
)

// The package's scripts, and their typed wrappers: structs whose fields
// are a script's KEYS then its ARGV, in the order and with the names of
// the file's header, so that a call site names what it passes
// (TestEveryScriptWrapperMirrorsItsHeader holds them to the headers).

//go:embed lua/*.lua
var luaFS embed.FS

var (
	electScript    = scripts.Load(luaFS, "lua/elect.lua", scripts.Checks)
	resignScript   = scripts.Load(luaFS, "lua/resign.lua", scripts.Checks)
	proclaimScript = scripts.Load(luaFS, "lua/proclaim.lua", scripts.Checks)
	leaderScript   = scripts.Load(luaFS, "lua/leader.lua")
)

// electLua runs lua/elect.lua.
type electLua struct {
	Lock, Record, Channel string
	Owner                 string
	Epoch                 int64
	Value, Publish        string
}

func (s electLua) callRetrying(ctx context.Context, c redis.UniversalClient, timeout time.Duration) scripts.Reply {
	return electScript.CallRetrying(ctx, c, timeout, 3, s.Lock, s.Record, s.Channel, s.Owner, s.Epoch, s.Value, s.Publish)
}

// resignLua runs lua/resign.lua.
type resignLua struct {
	Record, Channel string
	Owner           string
	Epoch           int64
	Publish         string
}

func (s resignLua) callRetrying(ctx context.Context, c redis.UniversalClient, timeout time.Duration) scripts.Reply {
	return resignScript.CallRetrying(ctx, c, timeout, 2, s.Record, s.Channel, s.Owner, s.Epoch, s.Publish)
}

// proclaimLua runs lua/proclaim.lua.
type proclaimLua struct {
	Lock, Record, Channel string
	Owner                 string
	Epoch                 int64
	Value, Publish        string
}

func (s proclaimLua) call(ctx context.Context, c redis.UniversalClient) *redis.Cmd {
	return proclaimScript.Call(ctx, c, 3, s.Lock, s.Record, s.Channel, s.Owner, s.Epoch, s.Value, s.Publish)
}

// leaderLua runs lua/leader.lua.
type leaderLua struct {
	Lock, Record string
}

func (s leaderLua) call(ctx context.Context, c redis.UniversalClient) *redis.Cmd {
	return leaderScript.Call(ctx, c, 2, s.Lock, s.Record)
}
