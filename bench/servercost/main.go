// Command servercost runs uncontended lock/unlock pairs, on fresh names,
// against one Redis server, so that the server's own cost per pair can be
// measured from outside: run.sh starts redis-server under valgrind's
// callgrind, runs this twice (200 and 2,200 pairs) and prints the
// difference in instructions per pair, which leaves out the start-up.
//
// -lib relock sends relock's lock.Mutex (relock-fair: lock.NewFair's;
// relock-read, relock-write: an rwlock.RWMutex's RLock and RUnlock, or
// its Lock and Unlock; relock-sem: a semaphore.Semaphore of 3 permits'
// Acquire and Release of one; relock-reentrant: a lock.Mutex's Do with a
// re-entry inside, two pairs);
// -lib redisson sends Redisson
// RLock's own scripts (RedissonLock.tryLockInnerAsync and
// unlockInnerAsync, as of its main branch) and the DEL of its unlock
// latch that follows, as Redisson sends them.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/lock"
	"github.com/relock-go/relock/rwlock"
	"github.com/relock-go/relock/semaphore"
)

var (
	redissonLock = redis.NewScript(`if ((redis.call('exists', KEYS[1]) == 0) ` +
		`or (redis.call('hexists', KEYS[1], ARGV[2]) == 1)) then ` +
		`redis.call('hincrby', KEYS[1], ARGV[2], 1); ` +
		`redis.call('pexpire', KEYS[1], ARGV[1]); ` +
		`return nil; ` +
		`end; ` +
		`return redis.call('pttl', KEYS[1]);`)
	redissonUnlock = redis.NewScript(`local val = redis.call('get', KEYS[3]); ` +
		`if val ~= false then return tonumber(val);end; ` +
		`if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then return nil;end; ` +
		`local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1); ` +
		`if (counter > 0) then ` +
		`redis.call('pexpire', KEYS[1], ARGV[2]); ` +
		`redis.call('set', KEYS[3], 0, 'px', ARGV[5]); ` +
		`return 0; ` +
		`else ` +
		`redis.call('del', KEYS[1]); ` +
		`redis.call(ARGV[4], KEYS[2], ARGV[1]); ` +
		`redis.call('set', KEYS[3], 1, 'px', ARGV[5]); ` +
		`return 1; ` +
		`end; `)
)

func main() {
	addr := flag.String("addr", "127.0.0.1:6399", "the server")
	n := flag.Int("n", 2000, "pairs")
	lib := flag.String("lib", "relock", "relock, relock-fair, relock-read, relock-write, relock-sem, relock-reentrant or redisson")
	flag.Parse()
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: *addr})
	defer c.Close()
	pair := relockPair(*lib)
	if *lib == "redisson" {
		pair = redissonPair
	}
	for i := range *n {
		if err := pair(ctx, c, fmt.Sprintf("servercost:%d", i)); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
}

// relockPair is one uncontended pair of the relock primitive lib names:
// its Do, which acquires, runs nothing and releases.
func relockPair(lib string) func(ctx context.Context, c *redis.Client, name string) error {
	nothing := func(context.Context) error { return nil }
	return func(ctx context.Context, c *redis.Client, name string) error {
		switch lib {
		case "relock-fair":
			return lock.NewFair(c, name).Do(ctx, nothing)
		case "relock-read":
			return rwlock.New(c, name).RDo(ctx, nothing)
		case "relock-write":
			return rwlock.New(c, name).Do(ctx, nothing)
		case "relock-reentrant":
			mu := lock.New(c, name)
			return mu.Do(ctx, func(held context.Context) error { return mu.Do(held, nothing) })
		case "relock-sem":
			return semaphore.New(c, name, 3).Do(ctx, 1, nothing)
		}
		return lock.New(c, name).Do(ctx, nothing)
	}
}

func redissonPair(ctx context.Context, c *redis.Client, name string) error {
	const owner = "6f1c2a7e-5b1d-4c3e-9a57-3d2f8e1b4c6a:1"
	latch := "redisson_unlock_latch:{" + name + "}:0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0"
	if err := redissonLock.Run(ctx, c, []string{name}, 30000, owner).Err(); err != redis.Nil {
		return fmt.Errorf("lock: %v", err)
	}
	keys := []string{name, "redisson_lock__channel:{" + name + "}", latch}
	if err := redissonUnlock.Run(ctx, c, keys, 0, 30000, owner, "publish", 15000).Err(); err != nil {
		return fmt.Errorf("unlock: %w", err)
	}
	return c.Del(ctx, latch).Err()
}
