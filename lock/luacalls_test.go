package lock

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
		"acquire.lua, without a latch": {Value: acquireLua{}, Partial: true, Run: func(w any, c conn.Client) {
			a := w.(acquireLua)
			a.Latch = nil
			a.call().Synced(ctx, c, scripts.ReplicaPolicy{})
		}},
		"fair_acquire.lua": {Value: fairAcquireLua{}, Run: func(w any, c conn.Client) {
			w.(fairAcquireLua).call().Synced(ctx, c, scripts.ReplicaPolicy{})
		}},
		"unlock_last.lua": {Value: unlockLastLua{}, Run: func(w any, c conn.Client) {
			w.(unlockLastLua).fairCall().Retrying(ctx, c, timeout)
		}},
		"unlock_last.lua, a lock's": {Value: unlockLastLua{}, Partial: true, Run: func(w any, c conn.Client) {
			w.(unlockLastLua).call().Retrying(ctx, c, timeout)
		}},
		"unlock.lua": {Value: unlockLua{}, Run: func(w any, c conn.Client) {
			w.(unlockLua).fairCall().Retrying(ctx, c, timeout)
		}},
		"unlock.lua, a lock's": {Value: unlockLua{}, Partial: true, Run: func(w any, c conn.Client) {
			w.(unlockLua).call().Retrying(ctx, c, timeout)
		}},
		"give_back.lua": {Value: giveBackLua{}, Run: func(w any, c conn.Client) {
			w.(giveBackLua).fairCall().Retrying(ctx, c, timeout)
		}},
		"give_back.lua, a lock's": {Value: giveBackLua{}, Partial: true, Run: func(w any, c conn.Client) {
			w.(giveBackLua).call().Retrying(ctx, c, timeout)
		}},
		"transfer.lua": {Value: transferLua{}, Run: func(w any, c conn.Client) {
			w.(transferLua).call().Retrying(ctx, c, timeout)
		}},
		"fair_transfer.lua": {Value: fairTransferLua{}, Run: func(w any, c conn.Client) {
			w.(fairTransferLua).call().Retrying(ctx, c, timeout)
		}},
		"fair_requeue.lua": {Value: fairRequeueLua{}, Run: func(w any, c conn.Client) {
			w.(fairRequeueLua).call().Retrying(ctx, c, timeout)
		}},
		"fair_withdraw.lua": {Value: fairWithdrawLua{}, Run: func(w any, c conn.Client) {
			_ = core.Withdraw(ctx, nil, core.On(c), timeout, w.(fairWithdrawLua).call())
		}},
	}
	// wake.lua is a library; renew.lua takes strided batches, laid out by
	// internal/lease.
	redistest.WrappersMirrorHeaders(t, luaFS, wrappers, "wake.lua", "renew.lua")
}
