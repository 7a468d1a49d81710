package fence_test

import (
	"context"
	"testing"

	"github.com/relock-go/relock/election"
	"github.com/relock-go/relock/lock"
	"github.com/relock-go/relock/rwlock"
)

// Each primitive's tokens work with a guard: two successive holds of one
// name, the later one's write first, then the earlier one's, refused.
func TestTokensOfEveryPrimitive(t *testing.T) {
	_, rdb, g := newRedis(t)
	ctx := context.Background()
	seq := func(name string, take func() (context.Context, int64, error), release func(context.Context) error) (int64, int64) {
		t.Helper()
		var tokens [2]int64
		for i := range tokens {
			held, tok, err := take()
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if err := release(held); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			tokens[i] = tok
		}
		return tokens[0], tokens[1]
	}
	mu := lock.New(rdb, "tok:lock")
	rw := rwlock.New(rdb, "tok:rwlock")
	el := election.New(rdb, "tok:election")
	cases := map[string][2]int64{}
	cases["lock"] = pair(seq("lock", func() (context.Context, int64, error) {
		h, err := mu.Lock(ctx)
		tok, _ := lock.FencingToken(h)
		return h, tok, err
	}, mu.Unlock))
	cases["rwlock"] = pair(seq("rwlock", func() (context.Context, int64, error) {
		h, err := rw.Lock(ctx)
		tok, _ := rwlock.FencingToken(h)
		return h, tok, err
	}, rw.Unlock))
	cases["election"] = pair(seq("election", func() (context.Context, int64, error) {
		h, err := el.Campaign(ctx, "me")
		tok, _ := election.Epoch(h)
		return h, tok, err
	}, el.Resign))
	for name, tok := range cases {
		if tok[1] <= tok[0] {
			t.Fatalf("%s: tokens %v do not increase", name, tok)
		}
		key := "tok:value:" + name
		if err := g.Set(ctx, key, tok[1], "later", 0); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		requireStale(t, g.Set(ctx, key, tok[0], "earlier", 0), tok[0], tok[1])
	}
}

func pair(a, b int64) [2]int64 { return [2]int64{a, b} }
