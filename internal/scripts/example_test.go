package scripts_test

import (
	"context"
	"fmt"
	"testing/fstest"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/internal/conn"
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
	c := conn.Of(client)
	fmt.Println(greet.With(1, "world", "hello").Run(ctx, c).Val())

	client.ScriptFlush(ctx)
	cmd := greet.With(1, "pipeline", "hi").Cmd(ctx)
	c.Exec(ctx, cmd)
	fmt.Println("noscript:", scripts.IsNoScript(cmd.Reply().Err()))

	// On a pipeline of its own, the caller sends Reload's EVAL instead.
	cmd = greet.Reload(ctx, cmd)
	c.Exec(ctx, cmd)
	fmt.Println(cmd.Reply().Val())
	// Output:
	// lua/greet.lua
	// hello, world
	// noscript: true
	// hi, pipeline
}
