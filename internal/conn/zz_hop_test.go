package conn_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/relock-go/relock/internal/conn"
)

func TestHopCost(t *testing.T) {
	addr := os.Getenv("HOP_ADDR")
	if addr == "" {
		t.Skip()
	}
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	ctx := context.Background()
	c.Ping(ctx)
	p := conn.NewPool(0)
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	variants := []struct {
		name string
		f    func()
	}{
		{"inline", func() { c.Ping(ctx) }},
		{"bound-timer", func() { _ = p.Bound(ctx, 5*time.Second, func() { c.Ping(ctx) }) }},
		{"bound-notimer", func() { _ = p.Bound(cctx, 0, func() { c.Ping(ctx) }) }},
		{"inline2", func() { c.Ping(ctx) }},
	}
	res := make([][]float64, len(variants))
	for round := 0; round < 30; round++ {
		for i, v := range variants {
			const n = 300
			t0 := time.Now()
			for j := 0; j < n; j++ {
				v.f()
			}
			res[i] = append(res[i], float64(time.Since(t0).Microseconds())/n)
		}
	}
	for i, v := range variants {
		slices.Sort(res[i])
		fmt.Printf("%-14s median %.1fµs\n", v.name, res[i][len(res[i])/2])
	}
}
