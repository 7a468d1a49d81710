package lock

import (
	"embed"

	"github.com/relock-go/relock/internal/core"
	"github.com/relock-go/relock/internal/lease"
	"github.com/relock-go/relock/internal/scripts"
)

// The lock's scripts, and one typed wrapper per Lua file (acquireLua for
// lua/acquire.lua, ...): a struct whose fields are the script's KEYS then
// ARGV, named and ordered as in the file's header
// (TestEveryScriptWrapperMirrorsItsHeader checks). Fields of type any take
// values the Mutex boxed once.

//go:embed lua/*.lua
var luaFS embed.FS

// wakeLib wakes a lock's waiters, or a fair lock's first waiter.
var wakeLib = scripts.NewLib(luaFS, "lua/wake.lua")

var (
	acquireScript = scripts.Load(luaFS, "lua/acquire.lua")
	// acquire and unlock_last, the common path, stand alone: Lua defines a
	// library's functions anew on every run.
	unlockScript     = scripts.Load(luaFS, "lua/unlock.lua", scripts.Checks)
	unlockLastScript = scripts.Load(luaFS, "lua/unlock_last.lua")
	transferScript   = scripts.Load(luaFS, "lua/transfer.lua", scripts.Fence)
	giveBackScript   = scripts.Load(luaFS, "lua/give_back.lua", scripts.Checks)

	// renewer renews lock leases in batches (internal/lease).
	renewer = &lease.RenewScript{Lua: scripts.Load(luaFS, "lua/renew.lua"), KeysPer: 1}
	// labeledRenewer also renews the label key; keptRenewer a key kept with
	// the hold (core.KeepWith); labeledKeptRenewer both.
	labeledRenewer     = &lease.RenewScript{Lua: renewer.Lua, KeysPer: 2}
	keptRenewer        = &lease.RenewScript{Lua: renewer.Lua, KeysPer: 2}
	labeledKeptRenewer = &lease.RenewScript{Lua: renewer.Lua, KeysPer: 3}

	fairAcquireScript  = scripts.Load(luaFS, "lua/fair_acquire.lua", scripts.Tokens, wakeLib)
	fairWithdrawScript = scripts.Load(luaFS, "lua/fair_withdraw.lua", scripts.Fence, wakeLib)
	fairTransferScript = scripts.Load(luaFS, "lua/fair_transfer.lua", scripts.Fence, wakeLib)
	fairRequeueScript  = scripts.Load(luaFS, "lua/fair_requeue.lua", scripts.Fence, wakeLib)

	// The release scripts with the libraries that serve a fair first waiter.
	fairUnlockScript     = scripts.Load(luaFS, "lua/unlock.lua", scripts.Fence, wakeLib)
	fairUnlockLastScript = scripts.Load(luaFS, "lua/unlock_last.lua", scripts.Fence, wakeLib)
	fairGiveBackScript   = scripts.Load(luaFS, "lua/give_back.lua", scripts.Fence, wakeLib)
)

type acquireLua struct {
	Lock, TokenCounter, Latch any
	LeaseMS                   any
	Owner                     any
	Mode, LatchLife           any
}

func (s acquireLua) call() scripts.Call {
	if s.Latch == nil {
		// KEYS[3] and ARGV[4] are read only with a latch: two strings
		// fewer for Redis to make on the common path.
		return acquireScript.With(2, s.Lock, s.TokenCounter, s.LeaseMS, s.Owner, s.Mode)
	}
	return acquireScript.With(3, s.Lock, s.TokenCounter, s.Latch,
		s.LeaseMS, s.Owner, s.Mode, s.LatchLife)
}

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

// unlockLastLua lays out a call of lua/unlock_last.lua; only fairCall
// sends Queue, Timeouts, Waiters and Grant.
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

// unlockLua lays out a call of lua/unlock.lua; only fairCall sends Queue,
// Timeouts, TokenCounter, Waiters and Grant.
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

// giveBackLua lays out a call of lua/give_back.lua; only fairCall sends
// Queue, Timeouts, TokenCounter, Waiters and Grant.
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

type transferLua struct {
	Lock, TokenCounter any
	Owner, NextOwner   string
	NextLeaseMS        any
}

func (s transferLua) call() scripts.Call {
	return transferScript.With(2, s.Lock, s.TokenCounter, s.Owner, s.NextOwner, s.NextLeaseMS)
}

type fairTransferLua struct {
	Lock, TokenCounter, Queue, Timeouts, Channel, Waiters any
	Owner                                                 string
	UnlockMessage                                         int
	Publish, Grant                                        any
	// Candidates are this process's waiters to offer the lock (ARGV[5],
	// ...), each sent as its attempt's seat, owner and lease in ms; read
	// here so that the call builds its arguments in one allocation.
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

type fairWithdrawLua struct {
	Lock, Channel, Queue, Timeouts, TokenCounter, Waiters any
	Waiter                                                string
	UnlockMessage                                         int
	Publish, Grant                                        any
	Owner                                                 string
}

func (s fairWithdrawLua) call() scripts.Call {
	return fairWithdrawScript.With(6, s.Lock, s.Channel, s.Queue, s.Timeouts, s.TokenCounter, s.Waiters,
		s.Waiter, s.UnlockMessage, s.Publish, s.Grant, s.Owner)
}
