package scripts

import (
	"context"
	"regexp"
	"strings"

	"github.com/redis/go-redis/v9"
)

// A script asks beforehand (may, in lua/acl.lua) only for the commands it
// runs after its first write: what runs before can be refused without
// changing anything, and asking costs each call about a microsecond of
// server time per command. Redis's own refusal names neither the command
// nor the permission to grant, so a call it refused is asked again, once,
// which command that was (lua/explain.lua): the cost falls on the refusal.

var explainScript = Load(libFS, "lua/explain.lua", Checks)

// callee finds the commands a script's source runs by name.
var callee = regexp.MustCompile(`redis\.p?call\(\s*'([a-z|]+)'`)

// commandsOf lists the commands src runs by name, once each, in order.
func commandsOf(src string) []any {
	var out []any
	seen := map[string]bool{}
	for _, m := range callee.FindAllStringSubmatch(src, -1) {
		if !seen[m[1]] {
			seen[m[1]] = true
			out = append(out, m[1])
		}
	}
	return out
}

// unnamedRefusal reports whether err is Redis's own refusal of a command a
// script ran: Redis 7.0 says "can't run this command" without naming it;
// later servers may name it ("no permissions to run the 'hset' command"),
// and then explain only puts it in the same words as may.
func unnamedRefusal(err error) bool {
	if err == nil {
		return false
	}
	msg := err.Error()
	return (strings.Contains(msg, "can't run this command") || strings.Contains(msg, "permissions to run the")) &&
		!strings.HasPrefix(msg, "NOPERM relock:")
}

// explain replaces the error of cmd, a call of s that Redis refused, with
// may's naming of the command refused, when a command of s is; else the
// error stays (a refused key or channel names itself).
func (s *Script) explain(ctx context.Context, c redis.UniversalClient, cmd *redis.Cmd) {
	args := cmd.Args()
	nkeys, _ := args[2].(int)
	argv := append(append(make([]any, 0, nkeys+len(s.cmds)), args[3:3+nkeys]...), s.cmds...)
	named := explainScript.Cmd(ctx, nkeys, argv...)
	if _ = c.Process(ctx, named); IsNoScript(named.Err()) {
		named = explainScript.Reload(ctx, named)
		_ = c.Process(ctx, named)
	}
	if err := named.Err(); err != nil && strings.HasPrefix(err.Error(), "NOPERM relock:") {
		cmd.SetErr(err)
	}
}
