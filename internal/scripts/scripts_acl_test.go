package scripts_test

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// may and tell live in lua/acl.lua (scripts.Checks) and in copies in the
// two other libraries, lua/fence.lua and the semaphore's state.lua (a
// script loads one library's definitions of them). The copies must not
// drift from the original.
func TestACLHelpersCopiedVerbatim(t *testing.T) {
	src, err := os.ReadFile("lua/acl.lua")
	require.NoError(t, err)
	body := string(src)
	body = body[strings.Index(body, "local function may"):]
	for _, f := range []string{
		"lua/fence.lua", "../../semaphore/lua/state.lua",
	} {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		require.Contains(t, string(b), body, "%s holds may and tell as lua/acl.lua has them", f)
	}
}
