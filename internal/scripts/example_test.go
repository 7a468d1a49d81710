package scripts_test

import (
	"context"
	"fmt"
	"testing/fstest"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/internal/scripts"
)

// A package embeds its .lua files (here an in-memory file system stands in
// for the embed.FS) and loads each script once, at init. Run sends EVALSHA
// and falls back to EVAL when the server does not know the script; a
// pipeline gets NOSCRIPT back instead, and preloads.
func Example() {
	mr, err := miniredis.Run()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer mr.Close()
	client := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer client.Close()
	ctx := context.Background()

	fsys := fstest.MapFS{"lua/greet.lua": {Data: []byte("return ARGV[1] .. ', ' .. KEYS[1]")}}
	greet := scripts.Load(fsys, "lua/greet.lua")
	fmt.Println(greet.Name())

	// EVALSHA answers NOSCRIPT on a fresh server; Run falls back to EVAL.
	fmt.Println(greet.With(1, "world", "hello").Run(ctx, client).Val())

	client.ScriptFlush(ctx)
	pipe := client.Pipeline()
	cmd := greet.With(1, "pipeline", "hi").Cmd(ctx)
	_ = pipe.Process(ctx, cmd)
	_, _ = pipe.Exec(ctx)
	fmt.Println("noscript:", scripts.IsNoScript(cmd.Err()))

	// On a pipeline of its own, the caller sends Reload's EVAL instead.
	pipe = client.Pipeline()
	cmd = greet.Reload(ctx, cmd)
	_ = pipe.Process(ctx, cmd)
	_, _ = pipe.Exec(ctx)
	fmt.Println(cmd.Val())
	// Output:
	// lua/greet.lua
	// hello, world
	// noscript: true
	// hi, pipeline
}
