package fencecheck

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/relock-go/relock/fence"
	"github.com/relock-go/relock/internal/testkit/redistest"
)

// On Redis Cluster every fenced command is one script on one node: the
// record shares the key's slot, with or without a hash tag of its own,
// and a user's script may touch the keys of that slot.
func TestRedisGuardOnCluster(t *testing.T) {
	cc, _ := redistest.StartCluster(t, 3)
	ctx := context.Background()
	g := fence.NewRedis(cc)
	for i := range 50 { // keys spread over the three masters
		key := fmt.Sprintf("cluster:key:%d", i)
		if i%2 == 1 {
			key = fmt.Sprintf("{tenant%d}:doc", i)
		}
		if err := g.Set(ctx, key, 10, "new", 0); err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		if err := g.HSet(ctx, key+":h", 10, "f", "v"); err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		if err := g.Set(ctx, key, 9, "old", 0); !errors.Is(err, fence.ErrStale) {
			t.Fatalf("%s: stale Set: %v", key, err)
		}
		if err := g.Expire(ctx, key, 10, time.Minute); err != nil {
			t.Fatal(err)
		}
		if err := g.Del(ctx, key, 11); err != nil {
			t.Fatal(err)
		}
	}
	s := newRedisStore(cc)
	checkInterleavings(t, s)
}
