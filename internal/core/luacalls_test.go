package core

import (
	"context"
	"testing"

	"github.com/relock-go/relock/internal/conn"
	"github.com/relock-go/relock/internal/testkit/redistest"
)

// TestEveryScriptWrapperMirrorsItsHeader holds the script's wrapper to
// the KEYS and ARGV its Lua file's header lists, so that neither changes
// without the other: a semaphore's call sends every key, an rwlock's and
// a lock's the leading ones.
func TestEveryScriptWrapperMirrorsItsHeader(t *testing.T) {
	ctx := context.Background()
	wrappers := map[string]redistest.Wrapper{
		"force_unlock.lua": {Value: forceUnlockLua{}, Run: func(w any, c conn.Client) {
			w.(forceUnlockLua).call().Run(ctx, c)
		}},
		"force_unlock.lua, an rwlock's": {Value: forceUnlockLua{}, Partial: true, Run: func(w any, c conn.Client) {
			s := w.(forceUnlockLua)
			s.Weights = ""
			s.call().Run(ctx, c)
		}},
		"force_unlock.lua, a lock's": {Value: forceUnlockLua{}, Partial: true, Run: func(w any, c conn.Client) {
			s := w.(forceUnlockLua)
			s.PrefixOrPermits, s.Weights = "", ""
			s.call().Run(ctx, c)
		}},
	}
	redistest.WrappersMirrorHeaders(t, luaFS, wrappers)
}
