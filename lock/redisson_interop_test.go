package lock_test

// Interop with Redisson (Java). relock promises that a Java service locking
// a name with Redisson's RLock and a Go service locking the same name with
// relock exclude each other, wake each other, and draw fencing tokens from
// one counter. No JVM runs here: fakeRedisson below speaks Redisson's RLock
// wire protocol through the Lua scripts in testdata/redisson_*.lua, which
// were written from a reading of Redisson's sources (RedissonLock,
// RedissonBaseLock, RedissonFencedLock, RedissonObject, LockPubSub) and do
// on the server what a Redisson client does:
//
//   - the lock is a hash named after the lock; the holder's field is
//     "<client uuid>:<thread id>" and counts its entries; the hash has a
//     PEXPIRE lease (lockWatchdogTimeout, 30 s by default);
//   - a lock attempt returns nil when it took or re-entered the lock, else
//     the lock's PTTL;
//   - an unlock decrements the holder's count; at zero it deletes the hash
//     and publishes the unlock message 0 on redisson_lock__channel:{<name>},
//     the channel Redisson's waiters listen on;
//   - RFencedLock draws a token with INCR on redisson_lock_token:{<name>} on
//     every entry;
//   - auxiliary names are "<prefix>:{<name>}" ("<prefix>:<name>" when the
//     name already holds a '{').

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/testkit/redistest"
	"github.com/relock-go/relock/lock"
)

var (
	//go:embed testdata/redisson_lock.lua
	redissonLockLua string
	//go:embed testdata/redisson_fenced_lock.lua
	redissonFencedLockLua string
	//go:embed testdata/redisson_unlock.lua
	redissonUnlockLua string

	redissonLockScript       = redis.NewScript(redissonLockLua)
	redissonFencedLockScript = redis.NewScript(redissonFencedLockLua)
	redissonUnlockScript     = redis.NewScript(redissonUnlockLua)
)

const (
	interopName = "order:1"
	// The names Redisson gives the lock's unlock channel and fencing
	// counter, spelled out rather than computed so that a change on either
	// side shows up here.
	interopChannel  = "redisson_lock__channel:{order:1}"
	interopTokenKey = "redisson_lock_token:{order:1}"

	// redissonLease is Redisson's default lockWatchdogTimeout, the lease a
	// Redisson lock() without a lease time writes; relock's default is the
	// same.
	redissonLease = 30 * time.Second
	// redissonUnlockMessage is Redisson's LockPubSub.UNLOCK_MESSAGE.
	redissonUnlockMessage = "0"
)

// interopHolder is the shape of a hash field written by either side:
// "<uuid>:<n>" (Redisson: client id and thread id; relock: process id and
// sequence).
var interopHolder = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}:[0-9]+$`)

// errRedissonNotHeld is what Redisson reports as IllegalMonitorStateException:
// an unlock by a thread that does not hold the lock.
var errRedissonNotHeld = errors.New("redisson: attempt to unlock lock, not locked by current thread")

// fakeRedisson is a Redisson client reduced to its RLock wire protocol: one
// client uuid, threads told apart by the id passed to each call.
type fakeRedisson struct {
	rdb redis.UniversalClient
	id  string
	// publish is the command of the unlock message: SPUBLISH on a cluster,
	// where Redisson (like relock) uses sharded pub/sub.
	publish string
}

func newFakeRedisson(t *testing.T, env *redistest.Env) *fakeRedisson {
	return &fakeRedisson{rdb: interopClient(t, env), id: uuid.NewString(), publish: publishCmd(env)}
}

func publishCmd(env *redistest.Env) string {
	if env.Cluster != nil {
		return "spublish"
	}
	return "publish"
}

// holder is Redisson's lock name for a thread: the hash field it writes.
func (r *fakeRedisson) holder(thread int64) string {
	return r.id + ":" + strconv.FormatInt(thread, 10)
}

// redissonPrefixName names an auxiliary key or channel of a lock so that it
// shares the lock's cluster slot, as Redisson's RedissonObject.prefixName.
func redissonPrefixName(prefix, name string) string {
	if strings.Contains(name, "{") {
		return prefix + ":" + name
	}
	return prefix + ":{" + name + "}"
}

// tryLock is RLock.tryLock() without waiting: it reports whether thread took
// (or re-entered) the lock and, when not, the lock's PTTL.
func (r *fakeRedisson) tryLock(ctx context.Context, name string, thread int64) (bool, time.Duration, error) {
	pttl, err := redissonLockScript.Run(ctx, r.rdb, []string{name},
		redissonLease.Milliseconds(), r.holder(thread)).Int64()
	if errors.Is(err, redis.Nil) {
		return true, 0, nil
	}
	if err != nil {
		return false, 0, err
	}
	return false, time.Duration(pttl) * time.Millisecond, nil
}

// tryLockFenced is RFencedLock.tryLockAndGetToken() without waiting: the
// token when thread took the lock, else ok is false and pttl says how long
// the current hold lasts.
func (r *fakeRedisson) tryLockFenced(ctx context.Context, name string, thread int64) (token int64, ok bool, pttl time.Duration, err error) {
	res, err := redissonFencedLockScript.Run(ctx, r.rdb,
		[]string{name, redissonPrefixName("redisson_lock_token", name)},
		redissonLease.Milliseconds(), r.holder(thread)).Int64Slice()
	if err != nil {
		return 0, false, 0, err
	}
	if len(res) != 2 {
		return 0, false, 0, fmt.Errorf("fenced lock: unexpected reply %v", res)
	}
	if res[0] == -1 {
		return res[1], true, 0, nil
	}
	return 0, false, time.Duration(res[0]) * time.Millisecond, nil
}

// unlock is RLock.unlock() for thread: released reports that the last entry
// went and the unlock message was published.
func (r *fakeRedisson) unlock(ctx context.Context, name string, thread int64) (released bool, err error) {
	// Each unlock call has its own request id; its latch key lets a retry
	// find the first answer, and is deleted once the answer is in.
	latch := redissonPrefixName("redisson_unlock_latch", name) + ":" + uuid.NewString()
	const latchMillis = 10_000 // Redisson derives it from its timeout and retry settings
	res, err := redissonUnlockScript.Run(ctx, r.rdb,
		[]string{name, redissonPrefixName("redisson_lock__channel", name), latch},
		redissonUnlockMessage, redissonLease.Milliseconds(), r.holder(thread), r.publish, latchMillis).Int64()
	if errors.Is(err, redis.Nil) {
		return false, errRedissonNotHeld
	}
	if err != nil {
		return false, err
	}
	if err := r.rdb.Del(ctx, latch).Err(); err != nil {
		return false, err
	}
	return res == 1, nil
}

// interopClient is a client of its own (its own connections, and for relock
// its own notification hub), closed at cleanup.
func interopClient(t *testing.T, env *redistest.Env) redis.UniversalClient {
	return env.NewClient(t)
}

func interopContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// interopSubscribe subscribes a separate client to the lock's unlock channel,
// as a waiting Redisson client would, and returns once Redis confirmed it.
func interopSubscribe(t *testing.T, ctx context.Context, env *redistest.Env) *redis.PubSub {
	t.Helper()
	c, kind := interopClient(t, env), "subscribe"
	var ps *redis.PubSub
	if env.Cluster != nil {
		ps, kind = c.SSubscribe(ctx, interopChannel), "ssubscribe"
	} else {
		ps = c.Subscribe(ctx, interopChannel)
	}
	t.Cleanup(func() { _ = ps.Close() }) // runs before the client's Close
	msg, err := ps.ReceiveTimeout(ctx, 5*time.Second)
	require.NoError(t, err)
	sub, ok := msg.(*redis.Subscription)
	require.True(t, ok, "first reply on the pub/sub connection: %#v", msg)
	require.Equal(t, kind, sub.Kind)
	require.Equal(t, interopChannel, sub.Channel)
	return ps
}

// interopNextMessage waits up to 5 s for the next message on ps.
func interopNextMessage(t *testing.T, ctx context.Context, ps *redis.PubSub) *redis.Message {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		left := time.Until(deadline)
		require.Positive(t, left, "no message on %s within 5 s", interopChannel)
		msg, err := ps.ReceiveTimeout(ctx, left)
		require.NoError(t, err, "waiting for a message on %s", interopChannel)
		if m, ok := msg.(*redis.Message); ok {
			return m
		}
	}
}

// interopNoMessageYet checks that nothing was published on ps's channel
// since the last message read: it publishes a marker through c and requires
// the marker to be the next message (one channel's messages arrive in order).
func interopNoMessageYet(t *testing.T, ctx context.Context, env *redistest.Env, ps *redis.PubSub, why string) {
	t.Helper()
	const marker = "interop-test-marker"
	pub := env.Universal.Publish
	if env.Cluster != nil {
		pub = env.Universal.SPublish
	}
	require.NoError(t, pub(ctx, interopChannel, marker).Err())
	assert.Equal(t, marker, interopNextMessage(t, ctx, ps).Payload, why)
}

// interopFields returns the lock hash: holder field -> count.
func interopFields(t *testing.T, ctx context.Context, c redis.UniversalClient) map[string]string {
	t.Helper()
	fields, err := c.HGetAll(ctx, interopName).Result()
	require.NoError(t, err)
	return fields
}

// requireOneHolder checks the Redisson RLock layout of the lock hash: one
// field "<uuid>:<n>" with count want, and returns the field.
func requireOneHolder(t *testing.T, ctx context.Context, c redis.UniversalClient, want int) string {
	t.Helper()
	fields := interopFields(t, ctx, c)
	require.Len(t, fields, 1, "lock hash %v", fields)
	for holder, count := range fields {
		require.Regexp(t, interopHolder, holder)
		require.Equal(t, strconv.Itoa(want), count, "count of %s", holder)
		return holder
	}
	return ""
}

// acquireCounter counts the scripts a client ran successfully on the lock
// hash. While a relock waiter waits, those are its acquire attempts.
type acquireCounter struct{ n atomic.Int64 }

func (*acquireCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (*acquireCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (c *acquireCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if err == nil && isScriptOn(cmd, interopName) {
			c.n.Add(1)
		}
		return err
	}
}

// isScriptOn reports whether cmd is EVAL or EVALSHA with key among its keys.
func isScriptOn(cmd redis.Cmder, key string) bool {
	switch strings.ToLower(cmd.Name()) {
	case "eval", "evalsha":
	default:
		return false
	}
	args := cmd.Args()
	if len(args) < 3 {
		return false
	}
	n, err := strconv.Atoi(fmt.Sprint(args[2]))
	if err != nil {
		return false
	}
	for i := 3; i < 3+n && i < len(args); i++ {
		if fmt.Sprint(args[i]) == key {
			return true
		}
	}
	return false
}

func TestRedissonInterop(t *testing.T) {
	for _, b := range redistest.AllBackends() {
		t.Run(b.Name, func(t *testing.T) {
			run := func(name string, f func(t *testing.T, env *redistest.Env)) {
				t.Run(name, func(t *testing.T) { f(t, b.New(t)) })
			}
			run("RelockHoldExcludesRedisson", testRelockHoldExcludesRedisson)
			run("RedissonHoldExcludesRelock", testRedissonHoldExcludesRelock)
			run("FencingTokensShareRedissonCounter", testFencingTokensShareRedissonCounter)
			run("RelockWaiterWakesOnRedissonUnlock", testRelockWaiterWakesOnRedissonUnlock)
			run("RedissonReentryKeepsRelockOut", testRedissonReentryKeepsRelockOut)
			run("ForceUnlockFreesRedissonHold", testForceUnlockFreesRedissonHold)
		})
	}
}

// relock holds the lock: a Redisson lock attempt fails with the lease that
// remains, and relock's unlock publishes the message Redisson's waiters wake
// on; then Redisson takes the lock.
func testRelockHoldExcludesRedisson(t *testing.T, env *redistest.Env) {
	ctx := interopContext(t)
	java := newFakeRedisson(t, env)
	mu := lock.New(interopClient(t, env), interopName)

	held, err := mu.Lock(ctx)
	require.NoError(t, err)
	relockHolder := requireOneHolder(t, ctx, env.Universal, 1)

	ok, pttl, err := java.tryLock(ctx, interopName, 1)
	require.NoError(t, err)
	require.False(t, ok, "Redisson took a lock relock holds")
	assert.Positive(t, pttl, "Redisson's failed attempt returns the PTTL")
	assert.LessOrEqual(t, pttl, redissonLease)
	assert.Equal(t, relockHolder, requireOneHolder(t, ctx, env.Universal, 1),
		"the failed Redisson attempt changed the hash")

	waiting := interopSubscribe(t, ctx, env) // a Redisson waiter's subscription
	require.NoError(t, mu.Unlock(held))
	msg := interopNextMessage(t, ctx, waiting)
	assert.Equal(t, interopChannel, msg.Channel)
	assert.Equal(t, redissonUnlockMessage, msg.Payload)

	ok, _, err = java.tryLock(ctx, interopName, 1)
	require.NoError(t, err)
	require.True(t, ok, "Redisson could not take the lock after relock released it")
	assert.Equal(t, java.holder(1), requireOneHolder(t, ctx, env.Universal, 1))

	released, err := java.unlock(ctx, interopName, 1)
	require.NoError(t, err)
	assert.True(t, released)
	assert.Equal(t, redissonUnlockMessage, interopNextMessage(t, ctx, waiting).Payload)
}

// Redisson holds the lock: relock's TryLock fails, relock sees the hold
// (IsLocked, TTL), and the hash both sides write has the same shape.
func testRedissonHoldExcludesRelock(t *testing.T, env *redistest.Env) {
	ctx := interopContext(t)
	java := newFakeRedisson(t, env)
	mu := lock.New(interopClient(t, env), interopName)

	ok, _, err := java.tryLock(ctx, interopName, 1)
	require.NoError(t, err)
	require.True(t, ok)
	redissonHolder := requireOneHolder(t, ctx, env.Universal, 1)
	assert.Equal(t, java.holder(1), redissonHolder)

	_, err = mu.TryLock(ctx)
	require.ErrorIs(t, err, lock.ErrNotAcquired)
	assert.Equal(t, redissonHolder, requireOneHolder(t, ctx, env.Universal, 1),
		"relock's failed attempt changed the hash")

	locked, err := mu.IsLocked(ctx)
	require.NoError(t, err)
	assert.True(t, locked, "IsLocked does not see Redisson's hold")
	ttl, err := mu.TTL(ctx)
	require.NoError(t, err)
	assert.Greater(t, ttl, redissonLease-5*time.Second, "TTL does not see Redisson's lease")
	assert.LessOrEqual(t, ttl, redissonLease)
	count, err := mu.HoldCount(ctx)
	require.NoError(t, err)
	assert.Zero(t, count, "a context without an owner holds nothing")

	released, err := java.unlock(ctx, interopName, 1)
	require.NoError(t, err)
	require.True(t, released)

	held, err := mu.TryLock(ctx)
	require.NoError(t, err)
	relockHolder := requireOneHolder(t, ctx, env.Universal, 1)
	assert.NotEqual(t, redissonHolder, relockHolder)
	ttl, err = mu.TTL(ctx)
	require.NoError(t, err)
	assert.Greater(t, ttl, redissonLease-5*time.Second, "relock's default lease is Redisson's")

	// relock's fencing counter is RFencedLock's.
	token, ok := lock.FencingToken(held)
	require.True(t, ok)
	stored, err := env.Universal.Get(ctx, interopTokenKey).Int64()
	require.NoError(t, err, "no fencing counter at %s", interopTokenKey)
	assert.Equal(t, token, stored)

	// A Redisson thread is now refused, and its unlock of relock's hold is
	// refused too (Redisson's IllegalMonitorStateException).
	ok, pttl, err := java.tryLock(ctx, interopName, 2)
	require.NoError(t, err)
	assert.False(t, ok)
	assert.Positive(t, pttl)
	_, err = java.unlock(ctx, interopName, 2)
	require.ErrorIs(t, err, errRedissonNotHeld)
	assert.Equal(t, relockHolder, requireOneHolder(t, ctx, env.Universal, 1))

	require.NoError(t, mu.Unlock(held))
	n, err := env.Universal.Exists(ctx, interopName).Result()
	require.NoError(t, err)
	assert.Zero(t, n)
}

// relock and Redisson's RFencedLock draw from one increasing sequence, every
// entry (re-entry too) drawing a token, and a refused attempt drawing none.
func testFencingTokensShareRedissonCounter(t *testing.T, env *redistest.Env) {
	ctx := interopContext(t)
	java := newFakeRedisson(t, env)
	mu := lock.New(interopClient(t, env), interopName)

	held, err := mu.Lock(ctx)
	require.NoError(t, err)
	t1, ok := lock.FencingToken(held)
	require.True(t, ok)

	_, ok, pttl, err := java.tryLockFenced(ctx, interopName, 1)
	require.NoError(t, err)
	require.False(t, ok, "RFencedLock took a lock relock holds")
	assert.Positive(t, pttl)
	stored, err := env.Universal.Get(ctx, interopTokenKey).Int64()
	require.NoError(t, err)
	assert.Equal(t, t1, stored, "the refused RFencedLock attempt drew a token")

	again, err := mu.Lock(held) // re-entry draws a token too
	require.NoError(t, err)
	t2, ok := lock.FencingToken(again)
	require.True(t, ok)
	assert.Greater(t, t2, t1, "re-entry did not draw a larger token")
	require.NoError(t, mu.Unlock(again))
	require.NoError(t, mu.Unlock(held))

	t3, ok, _, err := java.tryLockFenced(ctx, interopName, 1)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, t2+1, t3, "RFencedLock's token does not follow relock's")
	released, err := java.unlock(ctx, interopName, 1)
	require.NoError(t, err)
	require.True(t, released)

	held, err = mu.Lock(ctx)
	require.NoError(t, err)
	t4, ok := lock.FencingToken(held)
	require.True(t, ok)
	assert.Greater(t, t4, t3, "relock's token does not follow RFencedLock's")
	require.NoError(t, mu.Unlock(held))

	stored, err = env.Universal.Get(ctx, interopTokenKey).Int64()
	require.NoError(t, err)
	assert.Equal(t, t4, stored)
}

// A relock waiter wakes on the message a Redisson unlock publishes, not on
// its fallback timer: both leases are 30 s, and it acquires at once.
func testRelockWaiterWakesOnRedissonUnlock(t *testing.T, env *redistest.Env) {
	ctx := interopContext(t)
	java := newFakeRedisson(t, env)
	rc := interopClient(t, env)
	attempts := &acquireCounter{}
	rc.AddHook(attempts)
	mu := lock.New(rc, interopName) // default 30 s lease, renewed

	ok, _, err := java.tryLock(ctx, interopName, 1)
	require.NoError(t, err)
	require.True(t, ok)

	type result struct {
		held context.Context
		err  error
		at   time.Time
	}
	done := make(chan result, 1)
	waitCtx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel() // ends a waiter left behind by a failed assertion
	go func() {
		held, err := mu.Lock(waitCtx)
		done <- result{held, err, time.Now()}
	}()

	// The waiter tries, subscribes to Redisson's channel, and tries again
	// (the lock may have been freed in between); both tries fail. From then
	// on only the unlock message or its ~30 s fallback timer moves it.
	require.Eventually(t, func() bool {
		subs, err := env.Subscribers(ctx, interopChannel)
		return err == nil && subs >= 1 && attempts.n.Load() >= 2
	}, 5*time.Second, 5*time.Millisecond, "the relock waiter never subscribed to %s and retried", interopChannel)
	select {
	case r := <-done:
		t.Fatalf("relock acquired a lock Redisson holds: %v", r.err)
	case <-time.After(200 * time.Millisecond):
	}
	require.EqualValues(t, 2, attempts.n.Load(), "the waiter tried again without a wake-up")
	pttl, err := env.Universal.PTTL(ctx, interopName).Result()
	require.NoError(t, err)
	require.Greater(t, pttl, redissonLease-5*time.Second, "the fallback timer is not far off")

	unlockedAt := time.Now()
	released, err := java.unlock(ctx, interopName, 1)
	require.NoError(t, err)
	require.True(t, released)

	var r result
	select {
	case r = <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("the relock waiter did not wake on the Redisson unlock message (its fallback timer is ~%v)", pttl)
	}
	require.NoError(t, r.err)
	waited := r.at.Sub(unlockedAt)
	assert.Less(t, waited, 5*time.Second, "acquired %v after the Redisson unlock: woken by the timer, not the message", waited)
	assert.EqualValues(t, 3, attempts.n.Load(), "one try after the unlock message, none before it")
	holder := requireOneHolder(t, ctx, env.Universal, 1)
	assert.NotEqual(t, java.holder(1), holder)
	require.NoError(t, mu.Unlock(r.held))
}

// Redisson re-enters (count 2): one unlock leaves relock excluded, and
// publishes nothing; the second frees the lock for relock.
func testRedissonReentryKeepsRelockOut(t *testing.T, env *redistest.Env) {
	ctx := interopContext(t)
	java := newFakeRedisson(t, env)
	mu := lock.New(interopClient(t, env), interopName)
	waiting := interopSubscribe(t, ctx, env)

	for range 2 {
		ok, _, err := java.tryLock(ctx, interopName, 1)
		require.NoError(t, err)
		require.True(t, ok)
	}
	assert.Equal(t, java.holder(1), requireOneHolder(t, ctx, env.Universal, 2))
	ok, _, err := java.tryLock(ctx, interopName, 2)
	require.NoError(t, err)
	assert.False(t, ok, "another Redisson thread took a held lock")
	_, err = mu.TryLock(ctx)
	require.ErrorIs(t, err, lock.ErrNotAcquired)

	released, err := java.unlock(ctx, interopName, 1)
	require.NoError(t, err)
	require.False(t, released, "one unlock of two entries released the lock")
	assert.Equal(t, java.holder(1), requireOneHolder(t, ctx, env.Universal, 1))
	_, err = mu.TryLock(ctx)
	require.ErrorIs(t, err, lock.ErrNotAcquired, "relock took the lock while Redisson still held one entry")
	locked, err := mu.IsLocked(ctx)
	require.NoError(t, err)
	assert.True(t, locked)
	ttl, err := mu.TTL(ctx)
	require.NoError(t, err)
	assert.Positive(t, ttl)
	interopNoMessageYet(t, ctx, env, waiting, "an unlock that left an entry published")

	released, err = java.unlock(ctx, interopName, 1)
	require.NoError(t, err)
	require.True(t, released)
	assert.Equal(t, redissonUnlockMessage, interopNextMessage(t, ctx, waiting).Payload)

	held, err := mu.TryLock(ctx)
	require.NoError(t, err, "relock could not take the lock after Redisson's last unlock")
	assert.NotEqual(t, java.holder(1), requireOneHolder(t, ctx, env.Universal, 1))
	require.NoError(t, mu.Unlock(held))
	assert.Equal(t, redissonUnlockMessage, interopNextMessage(t, ctx, waiting).Payload)
}

// relock's ForceUnlock deletes a Redisson hold and publishes the unlock
// message on Redisson's channel.
func testForceUnlockFreesRedissonHold(t *testing.T, env *redistest.Env) {
	ctx := interopContext(t)
	java := newFakeRedisson(t, env)
	mu := lock.New(interopClient(t, env), interopName)
	waiting := interopSubscribe(t, ctx, env)

	ok, _, err := java.tryLock(ctx, interopName, 1)
	require.NoError(t, err)
	require.True(t, ok)

	freed, err := mu.ForceUnlock(ctx)
	require.NoError(t, err)
	assert.True(t, freed)
	msg := interopNextMessage(t, ctx, waiting)
	assert.Equal(t, interopChannel, msg.Channel)
	assert.Equal(t, redissonUnlockMessage, msg.Payload)
	n, err := env.Universal.Exists(ctx, interopName).Result()
	require.NoError(t, err)
	assert.Zero(t, n, "the Redisson hold survived ForceUnlock")

	// The Redisson holder learns it no longer holds the lock.
	_, err = java.unlock(ctx, interopName, 1)
	require.ErrorIs(t, err, errRedissonNotHeld)
	freed, err = mu.ForceUnlock(ctx)
	require.NoError(t, err)
	assert.False(t, freed, "ForceUnlock of a free lock reported a lock")
	interopNoMessageYet(t, ctx, env, waiting, "ForceUnlock of a free lock published")

	ok, _, err = java.tryLock(ctx, interopName, 2)
	require.NoError(t, err)
	require.True(t, ok, "Redisson could not take the force-unlocked lock")
	released, err := java.unlock(ctx, interopName, 2)
	require.NoError(t, err)
	assert.True(t, released)
	assert.Equal(t, redissonUnlockMessage, interopNextMessage(t, ctx, waiting).Payload)
}
