package fence

import (
	"context"
	"crypto/sha1"
	_ "embed"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock"
)

var (
	//go:embed record.lua
	recordLua string
	//go:embed write.lua
	writeLua string
	//go:embed script.lua
	scriptLua string

	writeScript = newScript(recordLua + writeLua)
)

// DefaultRetention is how long a Redis record outlives its key: as long
// as a lock's token counter outlives the lock's last acquisition.
const DefaultRetention = time.Hour

// Redis is the guard of keys kept in Redis: each fenced write is one
// script that refuses a token below the key's record (RecordKey), else
// writes the key and raises the record. The record follows the key's TTL
// and outlives it by the retention, so a stale holder cannot revive a key
// a newer one deleted or let expire. Write fenced keys only through the
// guard: a plain DEL or EXPIRE leaves the record behind or misaligned.
type Redis struct {
	client redis.UniversalClient
	retain time.Duration
}

// RedisOption configures NewRedis.
type RedisOption func(*Redis)

// WithRetention sets how long a record outlives its key (DefaultRetention;
// 0 deletes it with the key); a holder stalled longer can revive the key.
func WithRetention(d time.Duration) RedisOption {
	return func(g *Redis) { g.retain = max(d, 0) }
}

// NewRedis returns the guard of client's keys.
func NewRedis(client redis.UniversalClient, opts ...RedisOption) *Redis {
	g := &Redis{client: client, retain: DefaultRetention}
	for _, o := range opts {
		o(g)
	}
	return g
}

// Set sets key to value (with ttl when > 0, else no TTL), fenced by token.
func (g *Redis) Set(ctx context.Context, key string, token int64, value any, ttl time.Duration) error {
	args := []any{"set", value}
	if ttl > 0 {
		args = append(args, "PX", ttl.Milliseconds())
	}
	_, err := g.write(ctx, "set", key, token, args)
	return err
}

// HSet sets fields of the hash key (field, value, ...), fenced by token.
func (g *Redis) HSet(ctx context.Context, key string, token int64, fieldValues ...any) error {
	if len(fieldValues) == 0 || len(fieldValues)%2 != 0 {
		return wrap("hset", key, fmt.Errorf("%w: %d arguments, not field-value pairs", relock.ErrInvalidArgument, len(fieldValues)))
	}
	_, err := g.write(ctx, "hset", key, token, append([]any{"hset"}, fieldValues...))
	return err
}

// Del deletes key, fenced by token; its record stays for the retention.
func (g *Redis) Del(ctx context.Context, key string, token int64) error {
	_, err := g.write(ctx, "del", key, token, []any{"del"})
	return err
}

// Expire sets key's TTL to ttl, fenced by token.
func (g *Redis) Expire(ctx context.Context, key string, token int64, ttl time.Duration) error {
	if ttl <= 0 {
		return wrap("expire", key, fmt.Errorf("%w: ttl %v", relock.ErrInvalidArgument, ttl))
	}
	_, err := g.write(ctx, "expire", key, token, []any{"pexpire", ttl.Milliseconds()})
	return err
}

// Admit records token for resource and writes nothing else: a Guard for
// Middleware. The record lives the retention after its last token.
func (g *Redis) Admit(ctx context.Context, resource string, token int64) error {
	_, err := g.write(ctx, "admit", resource, token, []any{"admit"})
	return err
}

// Highest returns the highest token key has accepted, 0 if none.
func (g *Redis) Highest(ctx context.Context, key string) (int64, error) {
	vals, err := g.client.MGet(ctx, RecordKey(key)).Result() // no error for a missing key
	if err != nil {
		return 0, wrap("read", key, err)
	}
	s, _ := vals[0].(string)
	if s == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, wrap("read", key, err)
}

func (g *Redis) write(ctx context.Context, op, key string, token int64, args []any) (any, error) {
	if err := checkKey(op, key, token); err != nil {
		return nil, err
	}
	return g.run(ctx, op, writeScript, key, token, nil, args)
}

// run sends s, fencing keys and args first, by EVALSHA, or EVAL if missing.
func (g *Redis) run(ctx context.Context, op string, s *script, key string, token int64, keys []string, args []any) (any, error) {
	keys = append([]string{key, RecordKey(key)}, keys...)
	args = append([]any{token, g.retain.Milliseconds()}, args...)
	reply, err := g.client.EvalSha(ctx, s.sha, keys, args...).Result()
	if err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT") {
		reply, err = g.client.Eval(ctx, s.src, keys, args...).Result()
	}
	if err == nil {
		return reply, nil
	}
	if h, ok := strings.CutPrefix(err.Error(), "STALE "); ok {
		if highest, perr := strconv.ParseInt(h, 10, 64); perr == nil {
			return nil, stale(op, key, token, highest)
		}
	}
	return nil, wrap(op, key, err)
}

type script struct{ src, sha string }

func newScript(src string) *script {
	sum := sha1.Sum([]byte(src))
	return &script{src: src, sha: hex.EncodeToString(sum[:])}
}

// Script is a user's Lua run under the fencing check of one key.
type Script struct {
	g *Redis
	s *script
}

// Script returns src, a Lua body, run in one script under the check
// (ErrStale before it runs, the record raised after). src sees Run's KEYS
// and ARGV and returns its reply; every key it touches must share the key's slot.
func (g *Redis) Script(src string) *Script {
	return &Script{g: g, s: newScript(recordLua + "local function body(KEYS, ARGV)\n" + src + "\nend\n" + scriptLua)}
}

// Run runs the script fenced on key by token and returns its reply.
func (s *Script) Run(ctx context.Context, key string, token int64, keys []string, args ...any) (any, error) {
	if err := checkKey("run", key, token); err != nil {
		return nil, err
	}
	return s.g.run(ctx, "run", s.s, key, token, keys, args)
}
