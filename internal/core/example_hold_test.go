package core_test

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/internal/conn"
	"github.com/relock-go/relock/internal/core"
	"github.com/relock-go/relock/internal/lease"
)

func Example_hold() {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never dialled here
	defer c.Close()
	clk := lease.NewFakeClock(time.Unix(0, 0))
	wd := lease.New(lease.WithClock(clk))
	lease := wd.Start(lease.Spec{Targets: []lease.Target{{Client: conn.Of(c), Keys: []string{"k"}}}, Timeout: time.Minute}, clk.Now())

	key := core.NewKey(core.ClientOf(c), "example", "k", "")
	ctx, _ := core.Start(context.Background(), key, &core.Hold{Token: 42, Lease: lease},
		func(ctx context.Context, h *core.Hold) error { h.Lease.Stop(); return nil })
	tok, _ := core.Token(ctx)
	fmt.Println(tok, core.End(ctx, key, nil), context.Cause(ctx))
	fmt.Println(core.End(ctx, key, nil))
	// Output:
	// 42 <nil> context canceled
	// not held: already released
}

// An owner pinned in a context is whom an acquisition on it acquires for,
// when the context carries no hold of that lock: tests name their owners
// so.
func Example_owner() {
	id := core.Mint()
	ctx := core.WithOwner(context.Background(), id)
	again, ok := core.OwnerOf(ctx)
	fmt.Println(ok, again == id)
	// Output: true true
}
