package scripts_test

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// may and tell live in lua/acl.lua and, until every script is loaded with
// it, in copies: the libraries (lua/fence.lua, the semaphore's state.lua)
// and the scripts a primitive loads without them. The copies must not
// drift from the original.
func TestACLHelpersCopiedVerbatim(t *testing.T) {
	src, err := os.ReadFile("lua/acl.lua")
	require.NoError(t, err)
	body := string(src)
	body = body[strings.Index(body, "local function may"):]
	for _, f := range []string{
		"lua/fence.lua", "../../semaphore/lua/state.lua",
		"../../lock/lua/unlock.lua", "../../lock/lua/unlock_last.lua", "../../lock/lua/give_back.lua",
		"../../rwlock/lua/read_release.lua", "../../rwlock/lua/withdraw.lua",
	} {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		require.Contains(t, string(b), body, "%s holds may and tell as lua/acl.lua has them", f)
	}
}
