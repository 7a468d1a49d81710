package lock

import (
	"embed"

	"github.com/relock-go/relock/internal/core"
	"github.com/relock-go/relock/internal/lease"
	"github.com/relock-go/relock/internal/scripts"
)

// The lock's scripts, and one typed wrapper per Lua file: a struct whose
// fields are the script's KEYS then its ARGV, in the order and with the
// names of the file's header, so that a call site names what it passes
// (TestEveryScriptWrapperMirrorsItsHeader holds them to the headers).
// Fields of type any take values the Mutex boxed once.

//go:embed lua/*.lua
var luaFS embed.FS

// wakeLib wakes a lock's waiters: all on its channel, or a fair lock's
// first waiter on its own.
var wakeLib = scripts.NewLib(luaFS, "lua/wake.lua")

var (
	acquireScript = scripts.Load(luaFS, "lua/acquire.lua")
	// The common path's scripts, acquire and unlock_last, stand alone: Lua
	// defines a library's functions anew on every run. The other release
	// scripts carry only the permission checks; a fair lock's the fencing
	// library too.
	unlockScript     = scripts.Load(luaFS, "lua/unlock.lua", scripts.Checks)
	unlockLastScript = scripts.Load(luaFS, "lua/unlock_last.lua")
	transferScript   = scripts.Load(luaFS, "lua/transfer.lua", scripts.Fence)
	giveBackScript   = scripts.Load(luaFS, "lua/give_back.lua", scripts.Checks)

	// renewer renews lock leases in batches (internal/lease).
	renewer = &lease.RenewScript{Lua: scripts.Load(luaFS, "lua/renew.lua"), KeysPer: 1}
	// labeledRenewer renews a labeled hold's lease and its label key (the
	// same script, with one more key per lease).
	labeledRenewer = &lease.RenewScript{Lua: renewer.Lua, KeysPer: 2}
	// keptRenewer renews a hold's lease and a key kept with it
	// (core.KeepWith); labeledKeptRenewer, a labeled hold's and both keys.
	keptRenewer        = &lease.RenewScript{Lua: renewer.Lua, KeysPer: 2}
	labeledKeptRenewer = &lease.RenewScript{Lua: renewer.Lua, KeysPer: 3}

	fairAcquireScript  = scripts.Load(luaFS, "lua/fair_acquire.lua", scripts.Fence, wakeLib)
	fairWithdrawScript = scripts.Load(luaFS, "lua/fair_withdraw.lua", scripts.Fence, wakeLib)
	fairTransferScript = scripts.Load(luaFS, "lua/fair_transfer.lua", scripts.Fence, wakeLib)
	fairRequeueScript  = scripts.Load(luaFS, "lua/fair_requeue.lua", scripts.Fence, wakeLib)

	// The lock's release scripts, with the libraries that serve a fair
	// lock's first waiter.
	fairUnlockScript     = scripts.Load(luaFS, "lua/unlock.lua", scripts.Fence, wakeLib)
	fairUnlockLastScript = scripts.Load(luaFS, "lua/unlock_last.lua", scripts.Fence, wakeLib)
	fairGiveBackScript   = scripts.Load(luaFS, "lua/give_back.lua", scripts.Fence, wakeLib)
)

// acquireLua lays out a call of lua/acquire.lua.
type acquireLua struct {
	Lock, TokenCounter, Latch any
	LeaseMS                   any
	Owner                     any
	Mode, LatchLife           any
}

func (s acquireLua) call() scripts.Call {
	if s.Latch == nil {
		// KEYS[3] and ARGV[4] are read only with a latch: two strings fewer
		// for Redis to make on the common path.
		return acquireScript.With(2, s.Lock, s.TokenCounter, s.LeaseMS, s.Owner, s.Mode)
	}
	return acquireScript.With(3, s.Lock, s.TokenCounter, s.Latch,
		s.LeaseMS, s.Owner, s.Mode, s.LatchLife)
}

// fairAcquireLua lays out a call of lua/fair_acquire.lua.
type fairAcquireLua struct {
	Lock, TokenCounter, Latch, Queue, Timeouts, Waiters any
	LeaseMS                                             any
	Owner                                               any
	Mode, LatchLife                                     any
	MarkLifeMS                                          int64 // 0 takes no place in the list
	Waiter                                              string
	Grantable                                           any // "1" or "0": grantArg
}

func (s fairAcquireLua) call() scripts.Call {
	return fairAcquireScript.With(6, s.Lock, s.TokenCounter, s.Latch, s.Queue, s.Timeouts, s.Waiters,
		s.LeaseMS, s.Owner, s.Mode, s.LatchLife, s.MarkLifeMS, s.Waiter, s.Grantable)
}

// unlockLastLua lays out a call of lua/unlock_last.lua. Queue, Timeouts,
// Waiters and Grant are a fair lock's, which fairCall lays out; call, a
// lock's, leaves them out.
type unlockLastLua struct {
	Lock, Channel, TokenCounter, Forced any
	Queue, Timeouts, Waiters            any
	UnlockMessage                       int
	Owner                               string
	Publish, Grant                      any
}

func (s unlockLastLua) call() scripts.Call {
	return unlockLastScript.With(4, s.Lock, s.Channel, s.TokenCounter, s.Forced, s.UnlockMessage, s.Owner, s.Publish)
}

func (s unlockLastLua) fairCall() scripts.Call {
	return fairUnlockLastScript.With(7, s.Lock, s.Channel, s.TokenCounter, s.Forced, s.Queue, s.Timeouts, s.Waiters,
		s.UnlockMessage, s.Owner, s.Publish, s.Grant)
}

// unlockLua lays out a call of lua/unlock.lua. Queue, Timeouts,
// TokenCounter, Waiters and Grant are a fair lock's, which fairCall lays
// out; call, a lock's, leaves them out.
type unlockLua struct {
	Lock, Channel, Latch                   any
	Queue, Timeouts, TokenCounter, Waiters any
	UnlockMessage                          int
	LeaseMS                                any
	Owner                                  string
	Publish, LatchLife, Grant              any
}

func (s unlockLua) call() scripts.Call {
	return unlockScript.With(3, s.Lock, s.Channel, s.Latch,
		s.UnlockMessage, s.LeaseMS, s.Owner, s.Publish, s.LatchLife)
}

func (s unlockLua) fairCall() scripts.Call {
	return fairUnlockScript.With(7, s.Lock, s.Channel, s.Latch, s.Queue, s.Timeouts, s.TokenCounter, s.Waiters,
		s.UnlockMessage, s.LeaseMS, s.Owner, s.Publish, s.LatchLife, s.Grant)
}

// giveBackLua lays out a call of lua/give_back.lua. Queue, Timeouts,
// TokenCounter, Waiters and Grant are a fair lock's, which fairCall lays
// out; call, a lock's, leaves them out.
type giveBackLua struct {
	Lock, Latch, Channel                   any
	Queue, Timeouts, TokenCounter, Waiters any
	Owner                                  string
	UnlockMessage                          int
	Publish, Grant                         any
}

func (s giveBackLua) call() scripts.Call {
	return giveBackScript.With(3, s.Lock, s.Latch, s.Channel, s.Owner, s.UnlockMessage, s.Publish)
}

func (s giveBackLua) fairCall() scripts.Call {
	return fairGiveBackScript.With(7, s.Lock, s.Latch, s.Channel, s.Queue, s.Timeouts, s.TokenCounter, s.Waiters,
		s.Owner, s.UnlockMessage, s.Publish, s.Grant)
}

// transferLua lays out a call of lua/transfer.lua.
type transferLua struct {
	Lock, TokenCounter any
	Owner, NextOwner   string
	NextLeaseMS        any
}

func (s transferLua) call() scripts.Call {
	return transferScript.With(2, s.Lock, s.TokenCounter, s.Owner, s.NextOwner, s.NextLeaseMS)
}

// fairTransferLua lays out a call of lua/fair_transfer.lua.
type fairTransferLua struct {
	Lock, TokenCounter, Queue, Timeouts, Channel, Waiters any
	Owner                                                 string
	UnlockMessage                                         int
	Publish, Grant                                        any
	// Candidates are the waiters of this process to offer the lock
	// (ARGV[5], ...), each claimed by an *attempt, sent as its seat, owner
	// id and lease in ms. They are read here, not passed as built
	// arguments, so that the call builds its arguments with one
	// allocation.
	Candidates []*core.Waiter
}

func (s fairTransferLua) call() scripts.Call {
	argv := append(make([]any, 0, 10+3*len(s.Candidates)), s.Lock, s.TokenCounter, s.Queue, s.Timeouts, s.Channel, s.Waiters,
		s.Owner, s.UnlockMessage, s.Publish, s.Grant)
	for _, w := range s.Candidates {
		a := w.Claimant().(*attempt)
		argv = append(argv, a.seat, a.owner, a.m.msArg(a.lease))
	}
	return fairTransferScript.With(6, argv...)
}

// fairRequeueLua lays out a call of lua/fair_requeue.lua.
type fairRequeueLua struct {
	Lock, Queue, Timeouts, Waiters any
	Owner                          string
	MarkLifeMS                     int64
	LeaseMS                        any
	Waiter                         string
}

func (s fairRequeueLua) call() scripts.Call {
	return fairRequeueScript.With(4, s.Lock, s.Queue, s.Timeouts, s.Waiters,
		s.Owner, s.MarkLifeMS, s.LeaseMS, s.Waiter)
}

// fairWithdrawLua lays out a call of lua/fair_withdraw.lua.
type fairWithdrawLua struct {
	Lock, Channel, Queue, Timeouts, TokenCounter, Waiters any
	Waiter                                                string
	UnlockMessage                                         int
	Publish, Grant                                        any
	Owner                                                 string
}

// call is the withdrawal core.Withdraw sends.
func (s fairWithdrawLua) call() scripts.Call {
	return fairWithdrawScript.With(6, s.Lock, s.Channel, s.Queue, s.Timeouts, s.TokenCounter, s.Waiters,
		s.Waiter, s.UnlockMessage, s.Publish, s.Grant, s.Owner)
}
