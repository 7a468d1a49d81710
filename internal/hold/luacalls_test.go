package hold

import (
	"context"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/scripts"
	"github.com/relock-go/relock/internal/testkit/redistest"
)

// TestEveryScriptWrapperMirrorsItsHeader holds the script's wrapper to
// the KEYS and ARGV its Lua file's header lists, so that neither changes
// without the other: a semaphore's call sends every key, an rwlock's and
// a lock's the leading ones.
func TestEveryScriptWrapperMirrorsItsHeader(t *testing.T) {
	ctx := context.Background()
	wrappers := map[string]redistest.Wrapper{
		"force_unlock.lua": {Value: forceUnlockLua{}, Run: func(w any, c redis.UniversalClient) {
			w.(forceUnlockLua).call(ctx, c)
		}},
		"force_unlock.lua, an rwlock's": {Value: forceUnlockLua{}, Partial: true, Run: func(w any, c redis.UniversalClient) {
			s := w.(forceUnlockLua)
			s.Weights = ""
			s.call(ctx, c)
		}},
		"force_unlock.lua, a lock's": {Value: forceUnlockLua{}, Partial: true, Run: func(w any, c redis.UniversalClient) {
			s := w.(forceUnlockLua)
			s.PrefixOrPermits, s.Weights = "", ""
			s.call(ctx, c)
		}},
	}
	for name, w := range wrappers {
		t.Run(name, func(t *testing.T) {
			file, _, _ := strings.Cut(name, ",")
			src, err := luaFS.ReadFile("lua/" + file)
			require.NoError(t, err)
			keys, args := scripts.Header(string(src))
			redistest.MirrorsHeader(t, w, keys, args)
		})
	}
	redistest.EveryScriptWrapped(t, luaFS, wrappers)
}
