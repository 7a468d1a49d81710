package semaphore

import (
	"context"
	"embed"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/internal/acquire"
	"github.com/relock-go/relock/internal/lease"
	"github.com/relock-go/relock/internal/queue"
	"github.com/relock-go/relock/internal/scripts"
)

// The semaphore's scripts, and one typed wrapper per Lua file: a struct
// whose fields are the script's KEYS then its ARGV, in the order and with
// the names of the file's header, so that a call site names what it
// passes (TestEveryScriptWrapperMirrorsItsHeader holds them to the
// headers).

//go:embed lua/*.lua
var luaFS embed.FS

var (
	// state is the purge and the key lifetimes every script that writes
	// the semaphore's state shares.
	state           = scripts.NewLib(luaFS, "lua/state.lua")
	acquireScript   = scripts.Load(luaFS, "lua/acquire.lua", scripts.Checks, state)
	releaseScript   = scripts.Load(luaFS, "lua/release.lua", scripts.Checks, state)
	availableScript = scripts.Load(luaFS, "lua/available.lua", scripts.Checks, state)
	resizeScript    = scripts.Load(luaFS, "lua/resize.lua", scripts.Checks, state)
	withdrawScript  = scripts.Load(luaFS, "lua/withdraw.lua", scripts.Checks, state)
	renewer         = &lease.RenewScript{Lua: scripts.Load(luaFS, "lua/renew.lua"), KeysPer: 3}
)

// acquireLua runs lua/acquire.lua.
type acquireLua struct {
	Semaphore, Permits, Weights, Waiters, Marks, Channel string
	Size, N                                              int64
	PermitID                                             string
	LeaseMS                                              int64
	Waiter, Publish                                      string
	MarkLifeMS                                           int64
	SizePolicy                                           string
}

func (s acquireLua) callSynced(ctx context.Context, c redis.UniversalClient, p scripts.ReplicaPolicy) (*redis.Cmd, scripts.Acks) {
	return scripts.CallSynced(ctx, c, p, acquireScript, 6, s.Semaphore, s.Permits, s.Weights, s.Waiters, s.Marks, s.Channel,
		s.Size, s.N, s.PermitID, s.LeaseMS, s.Waiter, s.Publish, s.MarkLifeMS, s.SizePolicy)
}

// releaseLua runs lua/release.lua.
type releaseLua struct {
	Semaphore, Permits, Weights, Channel, Latch, Waiters, Marks string
	PermitID, Publish                                           string
	LatchLife                                                   any
	// Offered are the local waiters offered the permits (ARGV[4], ...),
	// each claimed by a *waiter, sent as its permit id, n and lease in
	// ms. They are read here, not passed as built arguments, so that the
	// call builds its arguments with one allocation.
	Offered []*queue.Waiter
}

func (s releaseLua) callRetrying(ctx context.Context, c redis.UniversalClient, timeout time.Duration) scripts.Reply {
	argv := append(make([]any, 0, 10+3*len(s.Offered)), s.Semaphore, s.Permits, s.Weights, s.Channel, s.Latch, s.Waiters, s.Marks,
		s.PermitID, s.Publish, s.LatchLife)
	for _, qw := range s.Offered {
		w := qw.Claimant().(*waiter)
		argv = append(argv, w.permitID, w.n, w.lease.Milliseconds())
	}
	return releaseScript.CallRetrying(ctx, c, timeout, 7, argv...)
}

// availableLua runs lua/available.lua.
type availableLua struct {
	Semaphore, Permits, Weights, Waiters, Marks string
	Size                                        int64
	SizePolicy                                  string
}

func (s availableLua) call(ctx context.Context, c redis.UniversalClient) *redis.Cmd {
	return availableScript.Call(ctx, c, 5, s.Semaphore, s.Permits, s.Weights, s.Waiters, s.Marks, s.Size, s.SizePolicy)
}

// resizeLua runs lua/resize.lua.
type resizeLua struct {
	Semaphore, Channel, Permits, Weights, Waiters, Marks string
	Size                                                 int64
	Publish                                              string
	RecordLifeMS                                         int64
}

func (s resizeLua) call(ctx context.Context, c redis.UniversalClient) *redis.Cmd {
	return resizeScript.Call(ctx, c, 6, s.Semaphore, s.Channel, s.Permits, s.Weights, s.Waiters, s.Marks,
		s.Size, s.Publish, s.RecordLifeMS)
}

// withdrawLua runs lua/withdraw.lua.
type withdrawLua struct {
	Waiters, Marks, Channel, Semaphore, Permits, Weights string
	Waiter, Publish                                      string
}

// withdraw runs it as acquire.Withdraw does, after after when not nil.
func (s withdrawLua) withdraw(ctx context.Context, after <-chan struct{}, c redis.UniversalClient, unlockTimeout time.Duration) error {
	return acquire.Withdraw(ctx, after, withdrawScript, c, unlockTimeout, 6, s.Waiters, s.Marks, s.Channel, s.Semaphore, s.Permits, s.Weights,
		s.Waiter, s.Publish)
}
