package scripts_test

import (
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/conn"
	"github.com/relock-go/relock/internal/scripts"
	"github.com/relock-go/relock/internal/testkit/redistest"
)

// A script that asks beforehand only for what runs after its first write
// (here: nothing) and is refused a command by Redis itself reports the
// command Redis refused by name, as may would have, and has written
// nothing: Redis 7.0's error names only the script's line.
func TestRefusalBeforeTheFirstWriteIsNamed(t *testing.T) {
	ctx := ctxT(t)
	fsys := fstest.MapFS{"lua/t.lua": {Data: []byte(
		"redis.call('get', KEYS[1])\nredis.call('hset', KEYS[1], 'f', 1)\nredis.call('pexpire', KEYS[1], 1000)\nreturn 1\n")}}
	s := scripts.Load(fsys, "lua/t.lua", scripts.Checks)
	admin := redistest.StartServer(t).Client(t)
	for _, tc := range []struct {
		name  string
		rules []string
		want  string
	}{
		{"hset", []string{"-hset"}, "NOPERM relock: this user may not run HSET"},
		{"get", []string{"-get"}, "NOPERM relock: this user may not run GET"},
		// Both refused: the one Redis refused first, not the first listed.
		{"both", []string{"-hset", "-get"}, "NOPERM relock: this user may not run GET"},
		{"key", []string{"-hset", "(+hset ~other)"}, "NOPERM relock: this user may not HSET on key k"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := aclUser(t, ctx, admin, "u"+tc.name, tc.rules...)
			err := s.With(1, "k").Run(ctx, conn.Of(c)).Err()
			require.EqualError(t, err, tc.want)
			require.False(t, conn.MayHaveRun(err), "a refusal is the server's reply: the script stopped there")
			require.Zero(t, admin.Exists(ctx, "k").Val(), "nothing written")
		})
	}
	// Allowed every command, the call runs as before.
	c := aclUser(t, ctx, admin, "all")
	require.NoError(t, s.With(1, "k").Run(ctx, conn.Of(c)).Err())
	require.Equal(t, int64(1), admin.Exists(ctx, "k").Val())
}
