package rwlock

import (
	"context"
	"embed"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/internal/acquire"
	"github.com/relock-go/relock/internal/lease"
	"github.com/relock-go/relock/internal/scripts"
)

// The rwlock's scripts, and one typed wrapper per Lua file: a struct
// whose fields are the script's KEYS then its ARGV, in the order and with
// the names of the file's header, so that a call site names what it
// passes (TestEveryScriptWrapperMirrorsItsHeader holds them to the
// headers).

//go:embed lua/*.lua
var luaFS embed.FS

var (
	readAcquire  = scripts.Load(luaFS, "lua/read_acquire.lua", scripts.Fence)
	writeAcquire = scripts.Load(luaFS, "lua/write_acquire.lua", scripts.Fence)
	readRelease  = scripts.Load(luaFS, "lua/read_release.lua", scripts.Checks)
	// writeRelease may also hand the read lock to local readers (handoff.go).
	writeRelease = scripts.Load(luaFS, "lua/write_release.lua", scripts.Fence)
	downgrade    = scripts.Load(luaFS, "lua/downgrade.lua", scripts.Fence)
	withdraw     = scripts.Load(luaFS, "lua/withdraw.lua", scripts.Checks)
	giveBack     = scripts.Load(luaFS, "lua/give_back.lua")

	readRenewer  = &lease.RenewScript{Lua: scripts.Load(luaFS, "lua/renew_read.lua"), KeysPer: 2}
	writeRenewer = &lease.RenewScript{Lua: scripts.Load(luaFS, "lua/renew_write.lua"), KeysPer: 1}
)

// readAcquireLua runs lua/read_acquire.lua.
type readAcquireLua struct {
	Lock, LeaseKeys, WriteWaiters, TokenCounter, Latch string
	LeaseMS                                            int64
	Owner, WriteOwner                                  string
	Mode, LatchLife                                    any
}

func (s readAcquireLua) callSynced(ctx context.Context, c redis.UniversalClient, p scripts.ReplicaPolicy) (*redis.Cmd, scripts.Acks) {
	return scripts.CallSynced(ctx, c, p, readAcquire, 5, s.Lock, s.LeaseKeys, s.WriteWaiters, s.TokenCounter, s.Latch,
		s.LeaseMS, s.Owner, s.WriteOwner, s.Mode, s.LatchLife)
}

// writeAcquireLua runs lua/write_acquire.lua.
type writeAcquireLua struct {
	Lock, WriteWaiters, TokenCounter, Prefix, Latch string
	LeaseMS                                         int64
	WriteOwner, Owner, Member                       string
	Mode, LatchLife                                 any
}

func (s writeAcquireLua) callSynced(ctx context.Context, c redis.UniversalClient, p scripts.ReplicaPolicy) (*redis.Cmd, scripts.Acks) {
	return scripts.CallSynced(ctx, c, p, writeAcquire, 5, s.Lock, s.WriteWaiters, s.TokenCounter, s.Prefix, s.Latch,
		s.LeaseMS, s.WriteOwner, s.Owner, s.Member, s.Mode, s.LatchLife)
}

// readReleaseLua runs lua/read_release.lua.
type readReleaseLua struct {
	Lock, Channel, LeaseKeys, Prefix, Latch string
	Owner, Publish                          string
	LatchLife                               any
}

func (s readReleaseLua) callRetrying(ctx context.Context, c redis.UniversalClient, timeout time.Duration) scripts.Reply {
	return readRelease.CallRetrying(ctx, c, timeout, 5, s.Lock, s.Channel, s.LeaseKeys, s.Prefix, s.Latch,
		s.Owner, s.Publish, s.LatchLife)
}

// writeReleaseLua runs lua/write_release.lua.
type writeReleaseLua struct {
	Lock, Channel, Latch, WriteWaiters, TokenCounter, Prefix string
	WriteOwner, Publish                                      string
	LatchLife                                                any
	// Readers are the readers to hand the read lock to (ARGV[4], ...):
	// owner id, then lease in ms, each; none for a plain release.
	Readers []any
}

func (s writeReleaseLua) callRetrying(ctx context.Context, c redis.UniversalClient, timeout time.Duration) scripts.Reply {
	argv := append(make([]any, 0, 9+len(s.Readers)), s.Lock, s.Channel, s.Latch, s.WriteWaiters, s.TokenCounter, s.Prefix,
		s.WriteOwner, s.Publish, s.LatchLife)
	return writeRelease.CallRetrying(ctx, c, timeout, 6, append(argv, s.Readers...)...)
}

// downgradeLua runs lua/downgrade.lua.
type downgradeLua struct {
	Lock, Channel, LeaseKeys, TokenCounter string
	LeaseMS                                int64
	Owner, WriteOwner, Publish             string
}

func (s downgradeLua) call(ctx context.Context, c redis.UniversalClient) *redis.Cmd {
	return downgrade.Call(ctx, c, 4, s.Lock, s.Channel, s.LeaseKeys, s.TokenCounter,
		s.LeaseMS, s.Owner, s.WriteOwner, s.Publish)
}

// withdrawLua runs lua/withdraw.lua.
type withdrawLua struct {
	WriteWaiters, Channel string
	Owner, Publish        string
}

// withdraw runs it as acquire.Withdraw does, after after when not nil.
func (s withdrawLua) withdraw(ctx context.Context, after <-chan struct{}, c redis.UniversalClient, unlockTimeout time.Duration) error {
	return acquire.Withdraw(ctx, after, withdraw, c, unlockTimeout, 2, s.WriteWaiters, s.Channel, s.Owner, s.Publish)
}

// giveBackLua runs lua/give_back.lua.
type giveBackLua struct {
	Latch string
}

func (s giveBackLua) callRetrying(ctx context.Context, c redis.UniversalClient, timeout time.Duration) scripts.Reply {
	return giveBack.CallRetrying(ctx, c, timeout, 1, s.Latch)
}
