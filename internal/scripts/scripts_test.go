package scripts_test

import (
	"context"
	"crypto/sha1"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/relock-go/relock/internal/conn"
	"github.com/relock-go/relock/internal/scripts"
	"github.com/relock-go/relock/internal/testkit/redistest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(redistest.Main(m)) }

//go:embed testdata/*.lua
var testFS embed.FS

var (
	incr = scripts.Load(testFS, "testdata/incr.lua")
	echo = scripts.Load(testFS, "testdata/echo.lua")
)

func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// recorder is a go-redis hook that notes the name of every command sent.
type recorder struct {
	mu   sync.Mutex
	cmds []string
}

func (r *recorder) DialHook(next redis.DialHook) redis.DialHook { return next }

func (r *recorder) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		r.mu.Lock()
		r.cmds = append(r.cmds, cmd.Name())
		r.mu.Unlock()
		return next(ctx, cmd)
	}
}

func (r *recorder) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		r.mu.Lock()
		for _, cmd := range cmds {
			r.cmds = append(r.cmds, cmd.Name())
		}
		r.mu.Unlock()
		return next(ctx, cmds)
	}
}

// take returns the script commands (EVAL, EVALSHA, SCRIPT ...) sent since
// the last take; the handshake of a new connection is left out.
func (r *recorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var cmds []string
	for _, c := range r.cmds {
		if strings.HasPrefix(c, "eval") || c == "script" {
			cmds = append(cmds, c)
		}
	}
	r.cmds = nil
	return cmds
}

func TestLoad(t *testing.T) {
	t.Parallel()
	src, err := fs.ReadFile(testFS, "testdata/incr.lua")
	require.NoError(t, err)
	sum := sha1.Sum(src)

	assert.Equal(t, "testdata/incr.lua", incr.Name())
	assert.Equal(t, hex.EncodeToString(sum[:]), incr.Hash(), "the hash EVALSHA takes is the SHA1 of the file")
	assert.NotEqual(t, incr.Hash(), echo.Hash())
}

func TestLoadPanicsOnAMissingFile(t *testing.T) {
	t.Parallel()
	var recovered any
	func() {
		defer func() { recovered = recover() }()
		scripts.Load(testFS, "testdata/missing.lua")
	}()
	require.NotNil(t, recovered, "Load of a missing file panics (it runs at package init)")
	msg := fmt.Sprint(recovered)
	assert.Contains(t, msg, "relock/scripts")
	assert.Contains(t, msg, "testdata/missing.lua", "the panic names the file")
}

func TestRunUsesEvalShaAndFallsBackOnNoScript(t *testing.T) {
	t.Parallel()
	redistest.ForBackends(t, func(t *testing.T, env *redistest.Env) {
		ctx := testContext(t)
		rec := &recorder{}
		env.Client.AddHook(rec)

		// A fresh server does not know the script: EVALSHA, NOSCRIPT, EVAL.
		n, err := incr.With(1, "counter", 5).Run(ctx, conn.Of(env.Client)).Int64()
		require.NoError(t, err)
		assert.Equal(t, int64(5), n)
		assert.Equal(t, []string{"evalsha", "eval"}, rec.take())

		// EVAL loaded it: from now on the body does not cross the network.
		n, err = incr.With(1, "counter", 2).Run(ctx, conn.Of(env.Client)).Int64()
		require.NoError(t, err)
		assert.Equal(t, int64(7), n)
		assert.Equal(t, []string{"evalsha"}, rec.take())

		// The script cache is emptied (a restart or a failover does it too).
		require.NoError(t, env.Client.ScriptFlush(ctx).Err())
		exists, err := env.Client.ScriptExists(ctx, incr.Hash()).Result()
		require.NoError(t, err)
		require.Equal(t, []bool{false}, exists)
		rec.take()

		n, err = incr.With(1, "counter", 1).Run(ctx, conn.Of(env.Client)).Int64()
		require.NoError(t, err, "Run still works after SCRIPT FLUSH")
		assert.Equal(t, int64(8), n)
		assert.Equal(t, []string{"evalsha", "eval"}, rec.take())
		exists, err = env.Client.ScriptExists(ctx, incr.Hash()).Result()
		require.NoError(t, err)
		assert.Equal(t, []bool{true}, exists, "the fallback loaded the script again")

		// Keys and arguments reach the script.
		vals, err := echo.With(1, "k", "a", 1).Run(ctx, conn.Of(env.Client)).StringSlice()
		require.NoError(t, err)
		assert.Equal(t, []string{"k", "a", "1"}, vals)
	})
}

func TestPipelinedCallReloadsAfterNoScript(t *testing.T) {
	t.Parallel()
	redistest.ForBackends(t, func(t *testing.T, env *redistest.Env) {
		ctx := testContext(t)

		c := conn.Of(env.Client)
		first := incr.With(1, "a", 1).Cmd(ctx)
		set := conn.NewCmd(ctx, 1, "set", "b", "x")
		c.Exec(ctx, first, set)
		err := first.Reply().Err()
		require.Error(t, err)
		assert.True(t, scripts.IsNoScript(err), "NOSCRIPT is detectable: %v", err)
		assert.NoError(t, set.Reply().Err(), "the rest of the pipeline ran")
		n, err := env.Client.Exists(ctx, "a").Result()
		require.NoError(t, err)
		assert.Zero(t, n, "the script did not run")

		a := incr.Reload(ctx, first)
		c.Exec(ctx, a)
		require.NoError(t, a.Reply().Err(), "Reload's EVAL runs the script")
		assert.Equal(t, int64(1), a.Reply().Val())
		exists, err := env.Client.ScriptExists(ctx, incr.Hash()).Result()
		require.NoError(t, err)
		assert.Equal(t, []bool{true}, exists, "and loaded it")

		a2 := incr.With(1, "a", 10).Cmd(ctx)
		c.Exec(ctx, a2)
		require.NoError(t, a2.Reply().Err(), "EVALSHA works once the script is loaded")
		assert.Equal(t, int64(11), a2.Reply().Val())
	})
}

func TestIsNoScript(t *testing.T) {
	t.Parallel()
	redistest.ForBackends(t, func(t *testing.T, env *redistest.Env) {
		ctx := testContext(t)
		noScript := env.Client.EvalSha(ctx, "ffffffffffffffffffffffffffffffffffffffff", nil).Err()
		require.Error(t, noScript)
		assert.True(t, scripts.IsNoScript(noScript), "%v", noScript)
		assert.True(t, scripts.IsNoScript(fmt.Errorf("renew: %w", noScript)), "wrapped")

		require.NoError(t, env.Client.RPush(ctx, "list", "x").Err())
		wrongType := env.Client.Incr(ctx, "list").Err()
		require.Error(t, wrongType)
		assert.False(t, scripts.IsNoScript(wrongType), "another server error: %v", wrongType)

		scriptErr := env.Client.Eval(ctx, "return redis.error_reply('MY failure')", nil).Err()
		require.Error(t, scriptErr)
		assert.False(t, scripts.IsNoScript(scriptErr), "%v", scriptErr)
	})

	assert.False(t, scripts.IsNoScript(nil))
	assert.False(t, scripts.IsNoScript(redis.Nil))
	assert.False(t, scripts.IsNoScript(context.Canceled))
	assert.False(t, scripts.IsNoScript(errors.New("NOSCRIPT No matching script")), "only a Redis reply counts, not any text")
}

func TestCluster(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	cc, servers := redistest.StartCluster(t, 3)
	require.NotNil(t, cc)
	admins := make([]*redis.Client, len(servers))
	for i, s := range servers {
		admins[i] = s.Client(t)
	}

	// One key per master.
	byNode := map[string]string{}
	for i := 0; len(byNode) < len(servers) && i < 10000; i++ {
		key := fmt.Sprintf("counter:%d", i)
		node, err := cc.MasterForKey(ctx, key)
		require.NoError(t, err)
		if _, ok := byNode[node.Options().Addr]; !ok {
			byNode[node.Options().Addr] = key
		}
	}
	require.Len(t, byNode, len(servers))

	hash, err := cc.ScriptLoad(ctx, incr.Source()).Result()
	require.NoError(t, err)
	require.Equal(t, incr.Hash(), hash, "Hash is the SHA1 the server computes")
	for i, admin := range admins {
		exists, err := admin.ScriptExists(ctx, incr.Hash()).Result()
		require.NoError(t, err)
		assert.Equal(t, []bool{true}, exists, "loaded on master %s", servers[i].Addr)
	}

	// A pipeline over every master: EVALSHA only, and it works.
	var cmds []conn.Cmd
	for _, key := range byNode {
		cmds = append(cmds, incr.With(1, key, 3).Cmd(ctx))
	}
	conn.Of(cc).Exec(ctx, cmds...)
	for _, cmd := range cmds {
		assert.Equal(t, int64(3), cmd.Reply().Val(), cmd.Args())
	}

	// One master forgets its scripts: Run still works for its keys.
	require.NoError(t, admins[0].ScriptFlush(ctx).Err())
	key := byNode[servers[0].Addr]
	n, err := incr.With(1, key, 1).Run(ctx, conn.Of(cc)).Int64()
	require.NoError(t, err)
	assert.Equal(t, int64(4), n)
}
