package rwlock

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
		"read_acquire.lua": {Value: readAcquireLua{}, Run: func(w any, c conn.Client) {
			w.(readAcquireLua).call().Synced(ctx, c, scripts.ReplicaPolicy{})
		}},
		"write_acquire.lua": {Value: writeAcquireLua{}, Run: func(w any, c conn.Client) {
			w.(writeAcquireLua).call().Synced(ctx, c, scripts.ReplicaPolicy{})
		}},
		"read_release.lua": {Value: readReleaseLua{}, Run: func(w any, c conn.Client) {
			w.(readReleaseLua).call().Retrying(ctx, c, timeout)
		}},
		"write_release.lua": {Value: writeReleaseLua{}, Run: func(w any, c conn.Client) {
			w.(writeReleaseLua).call().Retrying(ctx, c, timeout)
		}},
		"downgrade.lua": {Value: downgradeLua{}, Run: func(w any, c conn.Client) {
			w.(downgradeLua).call().Run(ctx, c)
		}},
		"withdraw.lua": {Value: withdrawLua{}, Run: func(w any, c conn.Client) {
			_ = core.Withdraw(ctx, nil, core.On(c), timeout, w.(withdrawLua).call())
		}},
	}
	// The renewal scripts take strided batches, laid out by internal/lease.
	redistest.WrappersMirrorHeaders(t, luaFS, wrappers, "renew_read.lua", "renew_write.lua")
}
