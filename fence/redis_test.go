package fence_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock"
	"github.com/relock-go/relock/fence"
)

func newRedis(t *testing.T, opts ...fence.RedisOption) (*miniredis.Miniredis, *redis.Client, *fence.Redis) {
	t.Helper()
	mr := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	return mr, rdb, fence.NewRedis(rdb, opts...)
}

func requireStale(t *testing.T, err error, token, highest int64) {
	t.Helper()
	var se *fence.StaleError
	var re *relock.Error
	if !errors.Is(err, fence.ErrStale) || !errors.As(err, &se) || !errors.As(err, &re) {
		t.Fatalf("err = %v, want a *relock.Error wrapping a *fence.StaleError", err)
	}
	if se.Token != token || se.Highest != highest || re.Primitive != "fence" {
		t.Fatalf("err = %v (%+v), want token %d highest %d", err, *se, token, highest)
	}
}

func TestRedisSetRefusesABelowToken(t *testing.T) {
	_, rdb, g := newRedis(t)
	ctx := context.Background()
	if err := g.Set(ctx, "k", 5, "a", 0); err != nil {
		t.Fatal(err)
	}
	if err := g.Set(ctx, "k", 5, "a2", 0); err != nil { // the same holder again
		t.Fatalf("repeated token refused: %v", err)
	}
	if err := g.Set(ctx, "k", 7, "b", 0); err != nil {
		t.Fatal(err)
	}
	err := g.Set(ctx, "k", 6, "stale", 0)
	requireStale(t, err, 6, 7)
	if want := `relock: set fence "k": stale fencing token 6: the resource has seen 7`; err.Error() != want {
		t.Errorf("err = %q, want %q", err, want)
	}
	if v, _ := rdb.Get(ctx, "k").Result(); v != "b" {
		t.Errorf("value %q, want b", v)
	}
	if h, err := g.Highest(ctx, "k"); err != nil || h != 7 {
		t.Errorf("Highest = %d, %v; want 7", h, err)
	}
	if h, err := g.Highest(ctx, "other"); err != nil || h != 0 {
		t.Errorf("Highest of a fresh key = %d, %v; want 0", h, err)
	}
}

func TestRedisEveryCommandIsFenced(t *testing.T) {
	_, rdb, g := newRedis(t)
	ctx := context.Background()
	if err := g.HSet(ctx, "h", 10, "f", "new"); err != nil {
		t.Fatal(err)
	}
	requireStale(t, g.HSet(ctx, "h", 9, "f", "old"), 9, 10)
	requireStale(t, g.Del(ctx, "h", 9), 9, 10)
	requireStale(t, g.Expire(ctx, "h", 9, time.Second), 9, 10)
	requireStale(t, g.Admit(ctx, "h", 9), 9, 10)
	if v, _ := rdb.HGet(ctx, "h", "f").Result(); v != "new" {
		t.Errorf("field %q, want new", v)
	}
	if ttl, _ := rdb.PTTL(ctx, "h").Result(); ttl != -1 {
		t.Errorf("a refused Expire set a TTL: %v", ttl)
	}
	if err := g.Expire(ctx, "h", 10, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := g.Del(ctx, "h", 11); err != nil {
		t.Fatal(err)
	}
	if n, _ := rdb.Exists(ctx, "h").Result(); n != 0 {
		t.Error("Del left the key")
	}
	requireStale(t, g.Set(ctx, "h", 10, "back", 0), 10, 11) // a stale holder cannot bring it back
}

func TestRedisRecordFollowsTheKey(t *testing.T) {
	mr, rdb, g := newRedis(t, fence.WithRetention(10*time.Second))
	ctx := context.Background()
	rec := fence.RecordKey("k")
	if rec != "{k}:fence" || fence.RecordKey("{u1}:k") != "{u1}:k:fence" {
		t.Fatalf("RecordKey = %q", rec)
	}
	if err := g.Set(ctx, "k", 3, "v", 0); err != nil {
		t.Fatal(err)
	}
	if ttl := mr.TTL(rec); ttl != 0 {
		t.Errorf("the record of a key without TTL expires in %v", ttl)
	}
	if err := g.Set(ctx, "k", 3, "v", time.Minute); err != nil {
		t.Fatal(err)
	}
	if ttl := mr.TTL(rec); ttl != 70*time.Second {
		t.Errorf("record TTL %v, want the key's 1m + 10s", ttl)
	}
	mr.FastForward(time.Minute + time.Second) // the key expires
	if n, _ := rdb.Exists(ctx, "k").Result(); n != 0 {
		t.Fatal("key still there")
	}
	requireStale(t, g.Set(ctx, "k", 2, "stale", 0), 2, 3)
	mr.FastForward(10 * time.Second)
	if mr.Exists(rec) {
		t.Error("the record outlived its key by more than the retention")
	}
}

func TestRedisRetentionZeroDeletesWithTheKey(t *testing.T) {
	mr, _, g := newRedis(t, fence.WithRetention(0))
	ctx := context.Background()
	if err := g.Set(ctx, "k", 3, "v", 0); err != nil {
		t.Fatal(err)
	}
	if err := g.Del(ctx, "k", 3); err != nil {
		t.Fatal(err)
	}
	if mr.Exists(fence.RecordKey("k")) {
		t.Error("record left after Del with retention 0")
	}
}

func TestRedisScriptRunsUnderTheCheck(t *testing.T) {
	_, rdb, g := newRedis(t)
	ctx := context.Background()
	incr := g.Script(`redis.call('SET', KEYS[1], ARGV[1]) return redis.call('INCR', KEYS[2])`)
	got, err := incr.Run(ctx, "{acct}:balance", 4, []string{"{acct}:balance", "{acct}:writes"}, "100")
	if err != nil || got != int64(1) {
		t.Fatalf("Run = %v, %v", got, err)
	}
	_ = rdb.ScriptFlush(ctx).Err() // NOSCRIPT: sent again with EVAL
	if _, err := incr.Run(ctx, "{acct}:balance", 5, []string{"{acct}:balance", "{acct}:writes"}, "200"); err != nil {
		t.Fatal(err)
	}
	_, err = incr.Run(ctx, "{acct}:balance", 4, []string{"{acct}:balance", "{acct}:writes"}, "300")
	requireStale(t, err, 4, 5)
	if v, _ := rdb.Get(ctx, "{acct}:balance").Result(); v != "200" {
		t.Errorf("value %q, want 200", v)
	}
	if n, _ := rdb.Get(ctx, "{acct}:writes").Int(); n != 2 {
		t.Errorf("the refused script ran: writes %d", n)
	}
}

func TestRedisRefusesBadArguments(t *testing.T) {
	_, _, g := newRedis(t)
	ctx := context.Background()
	for _, err := range []error{
		g.Set(ctx, "", 1, "v", 0),
		g.Set(ctx, "k", 0, "v", 0),
		g.Set(ctx, "a{b", 1, "v", 0),
		g.Set(ctx, "{}", 1, "v", 0),
		g.HSet(ctx, "k", 1, "f"),
		g.Expire(ctx, "k", 1, 0),
	} {
		if !errors.Is(err, relock.ErrInvalidArgument) {
			t.Errorf("err = %v, want ErrInvalidArgument", err)
		}
	}
	err := g.HSet(ctx, "k", 1, "f", "v")
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Set(ctx, "k", 1, "v", 0); err != nil { // SET replaces a hash
		t.Fatal(err)
	}
	if err := g.HSet(ctx, "k", 2, "f", "v"); err == nil || !strings.Contains(err.Error(), "WRONGTYPE") {
		t.Errorf("HSet on a string: %v", err)
	}
	if h, _ := g.Highest(ctx, "k"); h != 1 {
		t.Errorf("a failed write raised the record to %d", h)
	}
}
