package election

import (
	"context"
	"testing"

	"github.com/relock-go/relock/internal/conn"
	"github.com/relock-go/relock/internal/testkit/redistest"
)

// TestEveryScriptWrapperMirrorsItsHeader holds each script's wrapper to
// the KEYS and ARGV its Lua file's header lists, so that neither changes
// without the other.
func TestEveryScriptWrapperMirrorsItsHeader(t *testing.T) {
	ctx := context.Background()
	wrappers := map[string]redistest.Wrapper{
		"elect.lua": {Value: electLua{}, Run: func(w any, c conn.Client) {
			w.(electLua).call().Retrying(ctx, c, 0)
		}},
		"resign.lua": {Value: resignLua{}, Run: func(w any, c conn.Client) {
			w.(resignLua).call().Retrying(ctx, c, 0)
		}},
		"proclaim.lua": {Value: proclaimLua{}, Run: func(w any, c conn.Client) {
			w.(proclaimLua).call().Run(ctx, c)
		}},
		"leader.lua": {Value: leaderLua{}, Run: func(w any, c conn.Client) {
			w.(leaderLua).call().Run(ctx, c)
		}},
	}
	redistest.WrappersMirrorHeaders(t, luaFS, wrappers)
}
