package redistest

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// KeyTTL is a key and how long it has left: -1 when it has no TTL.
type KeyTTL struct {
	Key string
	TTL time.Duration
}

// KeyTTLs walks the whole keyspace with SCAN (every master on a cluster)
// and returns each key with its PTTL, sorted by key. A key that expires
// between the SCAN and its PTTL is left out.
func KeyTTLs(ctx context.Context, c redis.UniversalClient) ([]KeyTTL, error) {
	var mu sync.Mutex
	var out []KeyTTL
	scan := func(ctx context.Context, node redis.Cmdable) error {
		it := node.Scan(ctx, 0, "*", 1000).Iterator()
		for it.Next(ctx) {
			ttl, err := node.PTTL(ctx, it.Val()).Result()
			if err != nil {
				return err
			}
			if ttl == -2 || ttl == -2*time.Millisecond { // gone since the SCAN
				continue
			}
			if ttl < 0 {
				ttl = -1
			}
			mu.Lock()
			out = append(out, KeyTTL{Key: it.Val(), TTL: ttl})
			mu.Unlock()
		}
		return it.Err()
	}
	var err error
	if cc, ok := c.(*redis.ClusterClient); ok {
		err = cc.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error { return scan(ctx, node) })
	} else {
		err = scan(ctx, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, err
}

// RequireBoundedKeyspace fails t when any key has no TTL or a TTL above
// bound, naming the first few, and returns every key it saw.
func RequireBoundedKeyspace(t testing.TB, ctx context.Context, c redis.UniversalClient, bound time.Duration) []KeyTTL {
	t.Helper()
	all, err := KeyTTLs(ctx, c)
	if err != nil {
		t.Fatalf("redistest: scan: %v", err)
	}
	var bad []string
	for _, k := range all {
		if k.TTL < 0 || k.TTL > bound {
			bad = append(bad, fmt.Sprintf("%s (ttl %v)", k.Key, k.TTL))
		}
	}
	if len(bad) > 0 {
		t.Fatalf("%d of %d keys have no TTL or one above %v; first: %v", len(bad), len(all), bound, bad[:min(len(bad), 5)])
	}
	return all
}
