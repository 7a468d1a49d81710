package semaphore

import (
	"context"
	"testing"

	"github.com/relock-go/relock/internal/conn"
	"github.com/relock-go/relock/internal/core"
	"github.com/relock-go/relock/internal/scripts"
	"github.com/relock-go/relock/internal/testkit/redistest"
)

// TestEveryScriptWrapperMirrorsItsHeader holds each script's wrapper to
// the KEYS and ARGV its Lua file's header lists, so that neither changes
// without the other.
func TestEveryScriptWrapperMirrorsItsHeader(t *testing.T) {
	ctx := context.Background()
	const timeout = 0 // one send: the error reply is final anyway
	wrappers := map[string]redistest.Wrapper{
		"acquire.lua": {Value: acquireLua{}, Run: func(w any, c conn.Client) {
			w.(acquireLua).call().Synced(ctx, c, scripts.ReplicaPolicy{})
		}},
		"release.lua": {Value: releaseLua{}, Run: func(w any, c conn.Client) {
			w.(releaseLua).call().Retrying(ctx, c, timeout)
		}},
		"available.lua": {Value: availableLua{}, Run: func(w any, c conn.Client) {
			w.(availableLua).call().Run(ctx, c)
		}},
		"resize.lua": {Value: resizeLua{}, Run: func(w any, c conn.Client) {
			w.(resizeLua).call().Run(ctx, c)
		}},
		"withdraw.lua": {Value: withdrawLua{}, Run: func(w any, c conn.Client) {
			_ = core.Withdraw(ctx, nil, core.On(c), timeout, w.(withdrawLua).call())
		}},
	}
	// state.lua is a library; renew.lua takes strided batches, laid out
	// by internal/lease.
	redistest.WrappersMirrorHeaders(t, luaFS, wrappers, "state.lua", "renew.lua")
}
