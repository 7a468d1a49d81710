package semaphore

import (
	"embed"

	"github.com/relock-go/relock/internal/core"
	"github.com/relock-go/relock/internal/lease"
	"github.com/relock-go/relock/internal/scripts"
)

// The semaphore's scripts, and one wrapper per Lua file (<script>Lua) whose
// fields are the script's KEYS then ARGV, named and ordered as in the
// file's header (TestEveryScriptWrapperMirrorsItsHeader checks them).

//go:embed lua/*.lua
var luaFS embed.FS

var (
	// state is the purge and key lifetimes every writing script shares.
	state           = scripts.NewLib(luaFS, "lua/state.lua")
	acquireScript   = scripts.Load(luaFS, "lua/acquire.lua", scripts.Checks, state)
	releaseScript   = scripts.Load(luaFS, "lua/release.lua", scripts.Checks, state)
	availableScript = scripts.Load(luaFS, "lua/available.lua", scripts.Checks, state)
	resizeScript    = scripts.Load(luaFS, "lua/resize.lua", scripts.Checks, state)
	withdrawScript  = scripts.Load(luaFS, "lua/withdraw.lua", scripts.Checks, state)
	renewer         = &lease.RenewScript{Lua: scripts.Load(luaFS, "lua/renew.lua"), KeysPer: 3}
)

type acquireLua struct {
	Semaphore, Permits, Weights, Waiters, Marks, Channel any
	Size, N                                              int64
	PermitID                                             string
	LeaseMS                                              int64
	Waiter                                               string
	Publish                                              any
	MarkLifeMS                                           int64
	SizePolicy                                           string
}

func (s acquireLua) call() scripts.Call {
	return acquireScript.With(6, s.Semaphore, s.Permits, s.Weights, s.Waiters, s.Marks, s.Channel,
		s.Size, s.N, s.PermitID, s.LeaseMS, s.Waiter, s.Publish, s.MarkLifeMS, s.SizePolicy)
}

type releaseLua struct {
	Semaphore, Permits, Weights, Channel any
	Latch                                string
	Waiters, Marks                       any
	PermitID                             string
	Publish, LatchLife                   any
	// Offered are the local waiters offered the permits (ARGV[4], ...),
	// each a *waiter sent as permit id, n and lease in ms; read here so
	// that the call builds its arguments in one allocation.
	Offered []*core.Waiter
}

func (s releaseLua) call() scripts.Call {
	argv := append(make([]any, 0, 10+3*len(s.Offered)), s.Semaphore, s.Permits, s.Weights, s.Channel, s.Latch, s.Waiters, s.Marks,
		s.PermitID, s.Publish, s.LatchLife)
	for _, qw := range s.Offered {
		w := qw.Claimant().(*waiter)
		argv = append(argv, w.permitID, w.n, w.lease.Milliseconds())
	}
	return releaseScript.With(7, argv...)
}

type availableLua struct {
	Semaphore, Permits, Weights, Waiters, Marks any
	Size                                        int64
	SizePolicy                                  string
}

func (s availableLua) call() scripts.Call {
	return availableScript.With(5, s.Semaphore, s.Permits, s.Weights, s.Waiters, s.Marks,
		s.Size, s.SizePolicy)
}

type resizeLua struct {
	Semaphore, Channel, Permits, Weights, Waiters, Marks any
	Size                                                 int64
	Publish                                              any
	RecordLifeMS                                         int64
}

func (s resizeLua) call() scripts.Call {
	return resizeScript.With(6, s.Semaphore, s.Channel, s.Permits, s.Weights, s.Waiters, s.Marks,
		s.Size, s.Publish, s.RecordLifeMS)
}

type withdrawLua struct {
	Waiters, Marks, Channel, Semaphore, Permits, Weights any
	Waiter                                               string
	Publish                                              any
}

// call is the withdrawal core.Withdraw sends.
func (s withdrawLua) call() scripts.Call {
	return withdrawScript.With(6, s.Waiters, s.Marks, s.Channel, s.Semaphore, s.Permits, s.Weights,
		s.Waiter, s.Publish)
}
