package scripts

import (
	"errors"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/require"
)

// Valkey 8 words a script's refusals apart from Redis: its channel refusal
// must name the channel, not read as a key's.
func TestValkeyRefusalsAreNamed(t *testing.T) {
	s := Load(fstest.MapFS{"lua/p.lua": {Data: []byte(
		"redis.call('publish', KEYS[1], 'x')\nredis.call('hset', KEYS[2], 'f', 1)\nreturn 1\n")}}, "lua/p.lua")
	args := []any{"evalsha", s.Hash(), 2, "ch", "k"}
	line := func(n string) string { return " script: 42dc8ad661, on @user_script:" + n + "." }
	for _, tc := range []struct{ msg, want string }{
		{"ERR ACL failure in script: No permissions to access a channel" + line("1"),
			"NOPERM relock: this user may not PUBLISH to channel ch"},
		{"ERR ACL failure in script: No permissions to access a key" + line("2"),
			"NOPERM relock: this user may not HSET on key k"},
		{"ERR ACL failure in script: User u has no permissions to run the 'hset' command" + line("2"),
			"NOPERM relock: this user may not run HSET"},
	} {
		require.EqualError(t, s.named(errors.New(tc.msg), args), tc.want)
	}
}
