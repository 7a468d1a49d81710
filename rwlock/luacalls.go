package rwlock

import (
	"embed"

	"github.com/relock-go/relock/internal/lease"
	"github.com/relock-go/relock/internal/scripts"
)

// The rwlock's scripts, and one wrapper per Lua file (<script>Lua) whose
// fields are the script's KEYS then ARGV, named and ordered as in the
// file's header (TestEveryScriptWrapperMirrorsItsHeader checks them).

//go:embed lua/*.lua
var luaFS embed.FS

var (
	readAcquire  = scripts.Load(luaFS, "lua/read_acquire.lua", scripts.Tokens)
	writeAcquire = scripts.Load(luaFS, "lua/write_acquire.lua", scripts.Tokens)
	readRelease  = scripts.Load(luaFS, "lua/read_release.lua", scripts.Checks)
	// writeRelease may also hand the read lock to local readers (handoff.go).
	writeRelease = scripts.Load(luaFS, "lua/write_release.lua", scripts.Fence)
	downgrade    = scripts.Load(luaFS, "lua/downgrade.lua", scripts.Fence)
	withdraw     = scripts.Load(luaFS, "lua/withdraw.lua", scripts.Checks)

	readRenewer  = &lease.RenewScript{Lua: scripts.Load(luaFS, "lua/renew_read.lua"), KeysPer: 2}
	writeRenewer = &lease.RenewScript{Lua: scripts.Load(luaFS, "lua/renew_write.lua"), KeysPer: 1}
)

type readAcquireLua struct {
	Lock                       any
	LeaseKeys                  string
	WriteWaiters, TokenCounter any
	Latch                      string
	LeaseMS                    int64
	Owner, WriteOwner          string
	Mode, LatchLife            any
}

func (s readAcquireLua) call() scripts.Call {
	return readAcquire.With(5, s.Lock, s.LeaseKeys, s.WriteWaiters, s.TokenCounter, s.Latch,
		s.LeaseMS, s.Owner, s.WriteOwner, s.Mode, s.LatchLife)
}

type writeAcquireLua struct {
	Lock, WriteWaiters, TokenCounter, Prefix any
	Latch                                    string
	LeaseMS                                  int64
	WriteOwner, Owner, Member                string
	Mode, LatchLife                          any
}

func (s writeAcquireLua) call() scripts.Call {
	return writeAcquire.With(5, s.Lock, s.WriteWaiters, s.TokenCounter, s.Prefix, s.Latch,
		s.LeaseMS, s.WriteOwner, s.Owner, s.Member, s.Mode, s.LatchLife)
}

// readReleaseLua: AcquireLatch is a give-back's, an acquisition's latch
// (undo) or a downgrade's; a release leaves it, and its key, out.
type readReleaseLua struct {
	Lock, Channel       any
	LeaseKeys           string
	Prefix              any
	Latch, AcquireLatch string
	Owner               string
	Publish, LatchLife  any
}

func (s readReleaseLua) call() scripts.Call {
	if s.AcquireLatch != "" {
		return readRelease.With(6, s.Lock, s.Channel, s.LeaseKeys, s.Prefix, s.Latch, s.AcquireLatch,
			s.Owner, s.Publish, s.LatchLife)
	}
	return readRelease.With(5, s.Lock, s.Channel, s.LeaseKeys, s.Prefix, s.Latch,
		s.Owner, s.Publish, s.LatchLife)
}

// writeReleaseLua: AcquireLatch is as in readReleaseLua.
type writeReleaseLua struct {
	Lock, Channel                      any
	Latch                              string
	WriteWaiters, TokenCounter, Prefix any
	AcquireLatch                       string
	WriteOwner                         string
	Publish, LatchLife                 any
	// Readers (ARGV[4], ...): owner id, lease in ms, each; none for a plain release.
	Readers []any
}

func (s writeReleaseLua) call() scripts.Call {
	argv := append(make([]any, 0, 10+len(s.Readers)), s.Lock, s.Channel, s.Latch, s.WriteWaiters, s.TokenCounter, s.Prefix)
	nkeys := 6
	if s.AcquireLatch != "" {
		argv, nkeys = append(argv, s.AcquireLatch), 7
	}
	argv = append(argv, s.WriteOwner, s.Publish, s.LatchLife)
	return writeRelease.With(nkeys, append(argv, s.Readers...)...)
}

type downgradeLua struct {
	Lock, Channel     any
	LeaseKeys         string
	TokenCounter      any
	Latch             string
	LeaseMS           int64
	Owner, WriteOwner string
	Publish           any
	LatchLife         any
}

func (s downgradeLua) call() scripts.Call {
	return downgrade.With(5, s.Lock, s.Channel, s.LeaseKeys, s.TokenCounter, s.Latch,
		s.LeaseMS, s.Owner, s.WriteOwner, s.Publish, s.LatchLife)
}

type withdrawLua struct {
	WriteWaiters, Channel any
	Owner                 string
	Publish               any
}

// call is the withdrawal core.Withdraw sends.
func (s withdrawLua) call() scripts.Call {
	return withdraw.With(2, s.WriteWaiters, s.Channel, s.Owner, s.Publish)
}
