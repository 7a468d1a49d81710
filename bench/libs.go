package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/bsm/redislock"
	"github.com/go-redsync/redsync/v4"
	redsyncredis "github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidislock"

	"github.com/relock-go/relock/lock"
	"github.com/relock-go/relock/redlock"
)

// Library names, as the table's library column and the ratios name them.
const (
	libRaw       = "raw floor"
	libRelock    = "relock"
	libRedsync   = "redsync"
	libRedislock = "bsm/redislock"
	libRueidis   = "rueidislock"
	libInProcess = "in-process" // a channel, for the semaphore rows
)

const (
	// lease is the TTL every library is asked for (rueidislock keeps its
	// own default validity, renewed by its extender).
	lease = 30 * time.Second
	// poolSize is the go-redis pool of every go-redis based library.
	poolSize = 128
)

type redisClient = redis.Client

// handle is one goroutine's way to take one lock with one library. A handle
// keeps the state of its current hold, so it is not shared between
// goroutines; Unlock releases what the last Lock took.
type handle interface {
	Lock() error
	Unlock() error
}

// lib makes handles for one library at one tuning.
type lib struct {
	label  string // table label, e.g. "redsync (1ms)"
	family string // library name, for the ratios
	poll   bool   // waits by polling at a retry delay
	make   func(key string) handle
}

// newGoRedis returns a go-redis client with the options every go-redis based
// library gets.
func newGoRedis(addr string) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: addr, PoolSize: poolSize, ContextTimeoutEnabled: contextTimeout})
}

// contextTimeout is the -context-timeout flag: every go-redis client
// honours context deadlines (ContextTimeoutEnabled), as a service that
// sets it has them.
var contextTimeout bool

func token() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// ---- raw floor: SET NX PX, then EVALSHA compare-and-delete ----

const cadSrc = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0`

// loadCAD loads the compare-and-delete script and returns its SHA.
func loadCAD(ctx context.Context, c *redis.Client) (string, error) {
	return c.ScriptLoad(ctx, cadSrc).Result()
}

var leaseMS = lease.Milliseconds()

type rawHandle struct {
	c     *redis.Client
	sha   string
	key   string
	val   string
	retry time.Duration
}

func rawLib(c *redis.Client, sha string, retry time.Duration) lib {
	return lib{label: libRaw, family: libRaw, poll: true, make: func(key string) handle {
		return &rawHandle{c: c, sha: sha, key: key, val: token(), retry: retry}
	}}
}

func rawTrySet(ctx context.Context, c *redis.Client, key, val string) (bool, error) {
	err := c.Do(ctx, "set", key, val, "nx", "px", leaseMS).Err()
	if errors.Is(err, redis.Nil) {
		return false, nil
	}
	return err == nil, err
}

func rawDel(ctx context.Context, c *redis.Client, sha, key, val string) error {
	n, err := c.EvalSha(ctx, sha, []string{key}, val).Int()
	if err != nil {
		return err
	}
	if n != 1 {
		return fmt.Errorf("raw unlock %s: not held", key)
	}
	return nil
}

func (h *rawHandle) Lock() error {
	ctx := context.Background()
	for {
		ok, err := rawTrySet(ctx, h.c, h.key, h.val)
		if err != nil || ok {
			return err
		}
		if h.retry <= 0 {
			return errors.New("raw lock: held and no retry delay")
		}
		time.Sleep(h.retry)
	}
}

func (h *rawHandle) Unlock() error { return rawDel(context.Background(), h.c, h.sha, h.key, h.val) }

// ---- raw Redlock floor: the same two commands on every master at once ----

type rawRedlockHandle struct {
	cs   []*redis.Client
	shas []string
	key  string
	val  string
	errs []error
	oks  []bool
}

func rawRedlockLib(cs []*redis.Client, shas []string) lib {
	return lib{label: libRaw, family: libRaw, make: func(key string) handle {
		return &rawRedlockHandle{cs: cs, shas: shas, key: key, val: token(),
			errs: make([]error, len(cs)), oks: make([]bool, len(cs))}
	}}
}

func (h *rawRedlockHandle) each(f func(i int)) {
	var wg sync.WaitGroup
	for i := range h.cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f(i)
		}()
	}
	wg.Wait()
}

func (h *rawRedlockHandle) Lock() error {
	ctx := context.Background()
	for {
		h.each(func(i int) { h.oks[i], h.errs[i] = rawTrySet(ctx, h.cs[i], h.key, h.val) })
		won := 0
		for _, ok := range h.oks {
			if ok {
				won++
			}
		}
		if won >= len(h.cs)/2+1 {
			return nil
		}
		_ = h.Unlock()
		if err := errors.Join(h.errs...); err != nil {
			return err
		}
		time.Sleep(time.Millisecond)
	}
}

func (h *rawRedlockHandle) Unlock() error {
	ctx := context.Background()
	h.each(func(i int) {
		h.errs[i] = nil
		if _, err := h.cs[i].EvalSha(ctx, h.shas[i], []string{h.key}, h.val).Result(); err != nil {
			h.errs[i] = err
		}
	})
	return errors.Join(h.errs...)
}

// ---- relock ----

type relockHandle struct {
	mu   *lock.Mutex
	held context.Context
}

// relockLib shares one *lock.Mutex per name among the goroutines, as the
// package documents (ownership travels in the context, not the Mutex).
func relockLib(c *redis.Client) lib {
	var mu sync.Mutex
	mutexes := map[string]*lock.Mutex{}
	return lib{label: libRelock, family: libRelock, make: func(key string) handle {
		mu.Lock()
		defer mu.Unlock()
		m := mutexes[key]
		if m == nil {
			m = lock.New(c, key)
			mutexes[key] = m
		}
		return &relockHandle{mu: m}
	}}
}

// spreadLib is relock's lock, or its fair lock, with its handles spread
// over clients in turn (goroutine i on client i mod len(clients)).
func spreadLib(clients []*redis.Client, fair bool) lib {
	var mu sync.Mutex
	n := 0
	return lib{label: libRelock, family: libRelock, make: func(key string) handle {
		mu.Lock()
		defer mu.Unlock()
		c := clients[n%len(clients)]
		n++
		if fair {
			return &relockHandle{mu: lock.NewFair(c, key)}
		}
		return &relockHandle{mu: lock.New(c, key)}
	}}
}

func (h *relockHandle) Lock() error {
	held, err := h.mu.Lock(context.Background())
	if err != nil {
		return err
	}
	h.held = held
	return nil
}

func (h *relockHandle) Unlock() error { return h.mu.Unlock(h.held) }

type relockRedlockHandle struct {
	l    *redlock.Lock
	held context.Context
}

// relockRedlockLib: redlock.New over one lock.Mutex per master, same name.
func relockRedlockLib(cs []*redis.Client) lib {
	return lib{label: libRelock, family: libRelock, make: func(key string) handle {
		members := make([]redlock.Member, len(cs))
		for i, c := range cs {
			members[i] = lock.New(c, key)
		}
		return &relockRedlockHandle{l: redlock.New(members)}
	}}
}

func (h *relockRedlockHandle) Lock() error {
	held, err := h.l.Lock(context.Background())
	if err != nil {
		return err
	}
	h.held = held
	return nil
}

func (h *relockRedlockHandle) Unlock() error { return h.l.Unlock(h.held) }

// perAcquisition makes l's handle anew for every Lock (a new redlock.New
// over new lock.New values, a new redsync Mutex), as a request handler does.
func perAcquisition(l lib) lib {
	mk := l.make
	l.make = func(key string) handle { return &freshHandle{make: mk, key: key} }
	return l
}

type freshHandle struct {
	make func(string) handle
	key  string
	cur  handle
}

func (h *freshHandle) Lock() error {
	h.cur = h.make(h.key)
	return h.cur.Lock()
}

func (h *freshHandle) Unlock() error { return h.cur.Unlock() }

// ---- redsync ----

type redsyncHandle struct{ m *redsync.Mutex }

// redsyncLib: one redsync.Mutex per goroutine (a Mutex keeps the value of
// its hold, so it cannot be shared), over one pool per master.
func redsyncLib(cs []*redis.Client, retry time.Duration) lib {
	pools := make([]redsyncredis.Pool, len(cs))
	for i, c := range cs {
		pools[i] = goredis.NewPool(c)
	}
	rs := redsync.New(pools...)
	return lib{label: libRedsync, family: libRedsync, poll: true, make: func(key string) handle {
		return &redsyncHandle{m: rs.NewMutex(key,
			redsync.WithExpiry(lease),
			redsync.WithTries(math.MaxInt32),
			redsync.WithRetryDelay(retry))}
	}}
}

func (h *redsyncHandle) Lock() error { return h.m.LockContext(context.Background()) }

func (h *redsyncHandle) Unlock() error {
	ok, err := h.m.UnlockContext(context.Background())
	if err == nil && !ok {
		err = errors.New("redsync unlock: not released")
	}
	return err
}

// ---- bsm/redislock ----

type redislockHandle struct {
	c    *redislock.Client
	key  string
	opt  *redislock.Options
	held *redislock.Lock
}

func redislockLib(c *redis.Client, retry time.Duration) lib {
	rl := redislock.New(c)
	opt := &redislock.Options{RetryStrategy: redislock.LinearBackoff(retry)}
	return lib{label: libRedislock, family: libRedislock, poll: true, make: func(key string) handle {
		return &redislockHandle{c: rl, key: key, opt: opt}
	}}
}

func (h *redislockHandle) Lock() error {
	// Obtain retries until its context ends; a deadline of one lease is
	// what it sets itself when given none.
	ctx, cancel := context.WithTimeout(context.Background(), lease)
	defer cancel()
	l, err := h.c.Obtain(ctx, h.key, lease, h.opt)
	if err != nil {
		return err
	}
	h.held = l
	return nil
}

func (h *redislockHandle) Unlock() error { return h.held.Release(context.Background()) }

// ---- rueidislock ----

// newRueidisLocker: KeyMajority 1 for one Redis, everything else (validity
// 5 s, extend every 2.5 s, client-side caching, auto-pipelining) at its
// defaults. Its README advises NoLoopTracking for Redis >= 7.0.5, but with
// it, waiters of one Locker on one key stalled for good here once the other
// goroutines stopped asking (its waiters wake on client-side-caching
// invalidations, which NOLOOP withholds for changes made by the Locker's own
// connection, and on a local signal that evidently does not cover every
// case), so it is off unless -rueidis-noloop.
func newRueidisLocker(addr string, noLoop bool) (rueidislock.Locker, error) {
	return rueidislock.NewLocker(rueidislock.LockerOption{
		ClientOption:   rueidis.ClientOption{InitAddress: []string{addr}},
		KeyMajority:    1,
		NoLoopTracking: noLoop,
	})
}

type rueidisHandle struct {
	l      rueidislock.Locker
	key    string
	cancel context.CancelFunc
}

func rueidisLib(l rueidislock.Locker) lib {
	return lib{label: libRueidis, family: libRueidis, make: func(key string) handle {
		return &rueidisHandle{l: l, key: key}
	}}
}

func (h *rueidisHandle) Lock() error {
	_, cancel, err := h.l.WithContext(context.Background(), h.key)
	if err != nil {
		return err
	}
	h.cancel = cancel
	return nil
}

// Unlock: cancelling the lock's context releases it; the cancel function
// returns once the key is deleted.
func (h *rueidisHandle) Unlock() error {
	h.cancel()
	return nil
}

func tuned(name string, retry time.Duration) string {
	if retry <= 0 {
		return name
	}
	return fmt.Sprintf("%s (retry %v)", name, retry)
}
