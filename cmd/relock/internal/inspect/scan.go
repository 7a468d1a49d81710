package inspect

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/internal/scripts"
)

// Scan returns the keys of type typ ("" for any) that match pattern,
// sorted, with SCAN (never KEYS), on every master of a cluster.
func (in *Inspector) Scan(ctx context.Context, pattern, typ string) ([]string, error) {
	var mu sync.Mutex
	seen := map[string]struct{}{}
	found := func(ks []string) {
		mu.Lock()
		defer mu.Unlock()
		for _, k := range ks {
			seen[k] = struct{}{}
		}
	}
	var err error
	if cc, ok := in.cluster(); ok {
		err = cc.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
			return scanNode(ctx, node, pattern, typ, found)
		})
	} else {
		err = scanNode(ctx, in.client, pattern, typ, found)
	}
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(seen))
	for k := range seen {
		out = append(out, k)
	}
	sort.Strings(out)
	return out, nil
}

// scanNode SCANs one server for the keys of type typ ("" for any) that
// match pattern, handing each batch to found.
func scanNode(ctx context.Context, c redis.Cmdable, pattern, typ string, found func([]string)) error {
	var cursor uint64
	for {
		var ks []string
		var err error
		if typ == "" {
			ks, cursor, err = c.Scan(ctx, cursor, pattern, 1000).Result()
		} else {
			ks, cursor, err = c.ScanType(ctx, cursor, pattern, 1000, typ).Result()
		}
		if err != nil {
			return fmt.Errorf("SCAN: %w", err)
		}
		found(ks)
		if cursor == 0 {
			return nil
		}
	}
}

// auxKeys returns the keys of name whose ids no record lists: its holder
// labels and its unlock and acquire latches, sorted. They are found with
// SCAN on the server that holds name's slot, matching the tag every one
// of them carries.
func (in *Inspector) auxKeys(ctx context.Context, name string) ([]string, error) {
	var node redis.Cmdable = in.client
	if cc, ok := in.cluster(); ok {
		master, err := cc.MasterForKey(ctx, name)
		if err != nil {
			return nil, fmt.Errorf("the master of %q: %w", name, err)
		}
		node = master
	}
	prefixes := []string{scripts.Prefix("relock_holder", name) + ":", scripts.UnlockLatch(name), scripts.AcquireLatch(name)}
	var out []string
	err := scanNode(ctx, node, "*"+globEscape(scripts.Tag(name))+"*", "", func(ks []string) {
		for _, k := range ks {
			if slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(k, p) }) {
				out = append(out, k)
			}
		}
	})
	sort.Strings(out)
	return slices.Compact(out), err
}

// globEscape makes s match itself in a SCAN pattern.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
