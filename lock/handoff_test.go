package lock_test

// Tests of the local hand-off (transfer.lua), its chain bound, a waiter
// giving up during a hand-off, and unlock_last.lua.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/core"
	"github.com/relock-go/relock/internal/testkit/redistest"
	"github.com/relock-go/relock/lock"
)

// luaScript reads one of the package's scripts from lua/.
func luaScript(t testing.TB, name string) *redis.Script {
	t.Helper()
	src, ok := lock.ScriptSources()[name]
	require.True(t, ok, name)
	return redis.NewScript(src)
}

// scriptEvent is one script call seen on the wire, in the order sent.
type scriptEvent struct {
	name string
	cmd  *redis.Cmd
	done bool // the reply is in cmd
	skip bool // NOSCRIPT: resent as EVAL, which is its own event
}

// scriptLog is a go-redis hook that records the calls of the package's
// scripts (by name: acquire, transfer, unlock_last, unlock) in the order
// they are sent, with their replies. gate, when set, is called around
// each call: before it is sent (sent false) and after its reply (sent
// true); it may block to hold the call there. delay, when set, is added
// to every command, to widen races.
type scriptLog struct {
	ids   map[string]string // EVALSHA hash or EVAL source -> name
	delay time.Duration
	gate  atomic.Pointer[func(ev *scriptEvent, sent bool)]

	mu     sync.Mutex
	events []*scriptEvent
}

var scriptNames = []string{"acquire", "transfer", "unlock_last", "unlock", "renew", "force_unlock", "fair_acquire"}

func newScriptLog(t testing.TB) *scriptLog {
	l := &scriptLog{ids: map[string]string{}}
	sources := lock.ScriptSources()
	for _, n := range scriptNames {
		src, ok := sources[n]
		require.True(t, ok, n)
		l.ids[src] = n
		l.ids[redis.NewScript(src).Hash()] = n
	}
	return l
}

func (l *scriptLog) before(c redis.Cmder) *scriptEvent {
	args := c.Args()
	if len(args) < 2 {
		return nil
	}
	verb, _ := args[0].(string)
	if !strings.EqualFold(verb, "evalsha") && !strings.EqualFold(verb, "eval") {
		return nil
	}
	id, _ := args[1].(string)
	name, ok := l.ids[id]
	cmd, isCmd := c.(*redis.Cmd)
	if !ok || !isCmd {
		return nil
	}
	ev := &scriptEvent{name: name, cmd: cmd}
	l.mu.Lock()
	l.events = append(l.events, ev)
	l.mu.Unlock()
	if g := l.gate.Load(); g != nil {
		(*g)(ev, false)
	}
	return ev
}

func (l *scriptLog) after(ev *scriptEvent) {
	if ev == nil {
		return
	}
	l.mu.Lock()
	ev.done = true
	if err := ev.cmd.Err(); err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT") {
		ev.skip = true
	}
	l.mu.Unlock()
	if g := l.gate.Load(); g != nil {
		(*g)(ev, true)
	}
}

func (l *scriptLog) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) { return next(ctx, network, addr) }
}

func (l *scriptLog) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, c redis.Cmder) error {
		ev := l.before(c)
		if l.delay > 0 {
			time.Sleep(l.delay)
		}
		err := next(ctx, c)
		l.after(ev)
		if err == nil {
			err = c.Err() // as lose left it: Process sets the returned error on c
		}
		return err
	}
}

func (l *scriptLog) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		evs := make([]*scriptEvent, len(cmds))
		for i, c := range cmds {
			evs[i] = l.before(c)
		}
		if l.delay > 0 {
			time.Sleep(l.delay)
		}
		err := next(ctx, cmds)
		for _, ev := range evs {
			l.after(ev)
		}
		return err
	}
}

// lose makes ev's reply look lost in the network (Redis ran the script):
// the caller sees a retryable error, and the log skips the event. Only
// for a command sent alone (ProcessHook), as every release in these tests
// is: a pipeline's commands are not re-read here.
func (l *scriptLog) lose(ev *scriptEvent) {
	ev.cmd.SetErr(errReplyLost)
	l.mu.Lock()
	ev.skip = true
	l.mu.Unlock()
}

var errReplyLost = errors.New("test: reply lost (connection reset)")

// answered counts the calls of the script name that have their reply.
func (l *scriptLog) answered(name string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, ev := range l.events {
		if ev.name == name && ev.done && !ev.skip {
			n++
		}
	}
	return n
}

// replies returns the replies of the script name, in the order sent
// (integer replies as a one-element slice).
func (l *scriptLog) replies(t testing.TB, name string) [][]int64 {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var out [][]int64
	for _, ev := range l.events {
		if ev.name != name || !ev.done || ev.skip {
			continue
		}
		out = append(out, replyOf(t, ev))
	}
	return out
}

func replyOf(t testing.TB, ev *scriptEvent) []int64 {
	t.Helper()
	if n, err := ev.cmd.Int64(); err == nil {
		return []int64{n}
	}
	vals, err := ev.cmd.Int64Slice()
	require.NoError(t, err, "%s reply", ev.name)
	return vals
}

// releases returns the releases that freed or passed on a hold, in the
// order sent: "T" a hand-off (transfer.lua {1, token}), "U" a release
// through Redis (unlock_last.lua or unlock.lua answering 1).
func (l *scriptLog) releases(t testing.TB) string {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var b strings.Builder
	for _, ev := range l.events {
		if !ev.done || ev.skip {
			continue
		}
		switch ev.name {
		case "transfer":
			if r := replyOf(t, ev); r[0] == 1 {
				b.WriteByte('T')
			}
		case "unlock_last", "unlock":
			if r := replyOf(t, ev); r[0] == 1 {
				b.WriteByte('U')
			}
		}
	}
	return b.String()
}

// preload puts the scripts in the server's cache, so that no call is
// answered NOSCRIPT and sent again.
func preload(t testing.TB, c redis.UniversalClient) {
	t.Helper()
	for _, n := range scriptNames {
		require.NoError(t, luaScript(t, n).Load(context.Background(), c).Err())
	}
}

// channelWatch records the messages published on one channel, on a
// connection of its own.
type channelWatch struct {
	t       testing.TB
	pub     redis.UniversalClient
	ps      *redis.PubSub
	channel string
	markers int
}

func watchChannel(t testing.TB, env *redistest.Env, channel string) *channelWatch {
	t.Helper()
	c := env.NewClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ps, err := redistest.Subscribe(ctx, c, channel) // SSUBSCRIBE on a cluster
	require.NoError(t, err)
	t.Cleanup(func() { _ = ps.Close() })
	return &channelWatch{t: t, pub: c, ps: ps, channel: channel}
}

// since returns the messages published since the last call: it publishes
// a marker and reads up to it (Redis delivers a channel's messages in
// order, so every message published before the marker comes before it).
func (w *channelWatch) since() []string {
	w.t.Helper()
	w.markers++
	marker := fmt.Sprintf("marker-%d", w.markers)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(w.t, redistest.Publish(ctx, w.pub, w.channel, marker))
	var got []string
	for {
		msg, err := w.ps.ReceiveMessage(ctx)
		require.NoError(w.t, err)
		if msg.Payload == marker {
			return got
		}
		got = append(got, msg.Payload)
	}
}

func channelOf(name string) string  { return "redisson_lock__channel:{" + name + "}" }
func tokenKeyOf(name string) string { return "redisson_lock_token:{" + name + "}" }

func forcedKeyOf(name string) string { return "redisson_unlock_latch:{" + name + "}:forced" }

type acquired struct {
	ctx context.Context
	err error
}

// lockAsync runs mu.Lock(ctx) in a goroutine.
func lockAsync(mu *lock.Mutex, ctx context.Context) <-chan acquired {
	ch := make(chan acquired, 1)
	go func() {
		held, err := mu.Lock(ctx)
		ch <- acquired{held, err}
	}()
	return ch
}

func await(t testing.TB, ch <-chan acquired, what string) acquired {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(5 * time.Second):
		t.Fatalf("%s: Lock did not return", what)
		return acquired{}
	}
}

// waitIdle waits until a Lock that met a held lock has made its two tries
// (before and after joining the local queue) and has had their replies:
// it is then queued, at the head, and waits idle for a wake. The short
// sleep (settle) covers the few instructions from the reply back to the
// select. (A late unlock message of an earlier release may wake it for a
// third try; tests that need the exact count check it themselves.)
func waitIdle(t testing.TB, l *scriptLog, acquires int, settle time.Duration) {
	t.Helper()
	require.Eventually(t, func() bool { return l.answered("acquire") >= acquires }, 5*time.Second, time.Millisecond)
	time.Sleep(settle)
}

func ownerOf(t testing.TB, ctx context.Context) string {
	t.Helper()
	id, ok := core.Owner(ctx)
	require.True(t, ok)
	return id
}

func tokenOf(t testing.TB, ctx context.Context) int64 {
	t.Helper()
	tok, ok := lock.FencingToken(ctx)
	require.True(t, ok)
	return tok
}

// TestHandOffToLocalWaiter: A's unlock hands the lock to B, who waits in
// the same process, in one script: B returns with the next token, without
// a round trip of its own, and the lock is never free in between.
func TestHandOffToLocalWaiter(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		const name = "handoff"
		preload(t, env.Universal)
		log := newScriptLog(t)
		env.Universal.AddHook(log)
		watch := watchChannel(t, env, channelOf(name))
		mu := lock.New(env.Universal, name)

		a, err := mu.Lock(ctx)
		require.NoError(t, err)
		aTok := tokenOf(t, a)
		bCh := lockAsync(mu, ctx)
		waitIdle(t, log, 3, 20*time.Millisecond) // A's acquire, B's two tries
		select {
		case r := <-bCh:
			t.Fatalf("B returned while A holds the lock: %v", r.err)
		default:
		}

		require.NoError(t, mu.Unlock(a))
		b := await(t, bCh, "B")
		require.NoError(t, b.err)
		bTok := tokenOf(t, b.ctx)
		require.Greater(t, bTok, aTok, "the hand-off drew the next token")
		require.Equal(t, bTok, mustInt64(t, env.Universal.Get(ctx, tokenKeyOf(name))), "and stored it in the counter")
		bOwner := ownerOf(t, b.ctx)
		require.NotEqual(t, ownerOf(t, a), bOwner)

		require.Equal(t, map[string]string{bOwner: "1"}, env.Universal.HGetAll(ctx, name).Val())
		require.Equal(t, bTok, mustInt64(t, env.Universal.Get(ctx, tokenKeyOf(name))), "the counter was incremented once")
		require.Greater(t, env.Universal.PTTL(ctx, name).Val(), 20*time.Second, "B's lease is on the key")
		require.Equal(t, [][]int64{{1, bTok}}, log.replies(t, "transfer"))
		require.Zero(t, log.answered("unlock_last"), "A's hold was not freed through Redis")
		require.Equal(t, 3, log.answered("acquire"), "B made no try of its own")
		require.Empty(t, watch.since(), "no unlock message: the lock never became free")
		n, err := mu.HoldCount(b.ctx)
		require.NoError(t, err)
		require.Equal(t, 1, n)

		require.NoError(t, mu.Unlock(b.ctx))
		require.Equal(t, []string{"0"}, watch.since(), "the last release publishes the unlock message")
		require.Zero(t, env.Universal.Exists(ctx, name).Val())
		require.ErrorIs(t, mu.Unlock(b.ctx), lock.ErrNotHeld)
	})
}

func mustInt64(t testing.TB, cmd *redis.StringCmd) int64 {
	t.Helper()
	n, err := cmd.Int64()
	require.NoError(t, err)
	return n
}

// TestHandOffChainBoundedForOtherProcesses: goroutines of one process pass
// the lock among themselves by hand-offs, but after MaxHandOffs in a row
// a release goes through Redis, so a waiter of another process (another
// client: its own hub) gets in instead of starving.
func TestHandOffChainBoundedForOtherProcesses(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		const name = "chain"
		preload(t, env.Universal)
		log := newScriptLog(t)
		env.Universal.AddHook(log)
		remoteClient := env.NewClient(t)
		local := lock.New(env.Universal, name)
		remote := lock.New(remoteClient, name)

		var inside, overlaps, sections atomic.Int32
		section := func() {
			if inside.Add(1) != 1 {
				overlaps.Add(1)
			}
			sections.Add(1)
			time.Sleep(50 * time.Microsecond)
			inside.Add(-1)
		}
		var stop atomic.Bool
		var wg sync.WaitGroup
		for g := range 5 { // one holder and four waiters at any time
			wg.Add(1)
			go func() {
				defer wg.Done()
				for !stop.Load() {
					held, err := local.Lock(ctx)
					if err != nil {
						t.Errorf("local %d: %v", g, err)
						return
					}
					section()
					if err := local.Unlock(held); err != nil {
						t.Errorf("local %d unlock: %v", g, err)
						return
					}
				}
			}()
		}
		defer func() { stop.Store(true); wg.Wait() }()
		// The chain runs: the bound has been reached at least twice.
		require.Eventually(t, func() bool { return log.answered("transfer") > 2*core.MaxHandOffs }, 5*time.Second, time.Millisecond)

		rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		start := time.Now()
		held, err := remote.Lock(rctx)
		waited := time.Since(start)
		require.NoError(t, err, "the remote waiter starved")
		section()
		require.NoError(t, remote.Unlock(held))
		t.Logf("remote waited %v; %d local sections so far", waited, sections.Load())
		require.Less(t, waited, 2*time.Second)

		stop.Store(true)
		wg.Wait()
		require.Zero(t, overlaps.Load(), "two holders inside at once")
		seq := log.releases(t)
		longest := longestChain(seq)
		t.Logf("%d releases, %d hand-offs, longest chain %d", len(seq), strings.Count(seq, "T"), longest)
		require.LessOrEqual(t, longest, core.MaxHandOffs, "a chain of hand-offs past the bound: %s", seq)
		require.Equal(t, core.MaxHandOffs, longest, "the chain reaches the bound under contention")
		require.Zero(t, env.Universal.Exists(ctx, name).Val())
	})
}

// TestHandOffWaiterCancelledGivesLockBack: a waiter whose context ends
// while a hand-off to it is in progress, or done but not yet taken, gives
// the lock back: it is then free, or handed to the next waiter, never
// stuck with an owner nobody holds.
func TestHandOffWaiterCancelledGivesLockBack(t *testing.T) {
	// Deterministic: the transfer to B is held on the wire (before it
	// reaches Redis, or after Redis ran it but before its reply is read)
	// while B's context is cancelled.
	for _, at := range []struct {
		name string
		sent bool
	}{{"before-redis", false}, {"after-redis", true}} {
		for _, next := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/next=%v", at.name, next), func(t *testing.T) {
				each(t, func(t *testing.T, env *redistest.Env) {
					cancelledDuringTransfer(t, env, at.sent, next)
				})
			})
		}
	}
	// Racy: B is cancelled at a random moment around A's unlock, with
	// every command slowed down to widen the window.
	t.Run("race", func(t *testing.T) {
		each(t, func(t *testing.T, env *redistest.Env) {
			cancelledRacingUnlock(t, env)
		})
	})
}

func cancelledDuringTransfer(t *testing.T, env *redistest.Env, afterRedis, next bool) {
	ctx := ctxT(t)
	const name = "giveback"
	preload(t, env.Universal)
	log := newScriptLog(t)
	env.Universal.AddHook(log)
	mu := lock.New(env.Universal, name)

	a, err := mu.Lock(ctx)
	require.NoError(t, err)
	bctx, cancelB := context.WithCancel(ctx)
	defer cancelB()
	bCh := lockAsync(mu, bctx)
	waitIdle(t, log, 3, 20*time.Millisecond)
	var cCh <-chan acquired
	if next {
		cCh = lockAsync(mu, ctx) // queues behind B, makes no try
		time.Sleep(20 * time.Millisecond)
	}

	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	gate := func(ev *scriptEvent, sent bool) {
		if ev.name == "transfer" && sent == afterRedis {
			once.Do(func() { close(entered); <-release })
		}
	}
	log.gate.Store(&gate)
	aDone := make(chan error, 1)
	go func() { aDone <- mu.Unlock(a) }()
	select {
	case <-entered:
	case <-time.After(5 * time.Second):
		t.Fatal("A's unlock did not hand the lock over")
	}
	cancelB()
	close(release)

	b := await(t, bCh, "B")
	require.ErrorIs(t, b.err, context.Canceled)
	require.NoError(t, <-aDone)
	transfers := log.replies(t, "transfer")
	require.NotEmpty(t, transfers)
	require.EqualValues(t, 1, transfers[0][0], "the lock was handed to B")
	handedTok := transfers[0][1]

	if !next {
		// B gave it back through Redis: free at once.
		require.Zero(t, env.Universal.Exists(ctx, name).Val(), "the lock is stuck with B's owner: %v", env.Universal.HGetAll(ctx, name).Val())
		require.Equal(t, [][]int64{{1}}, log.replies(t, "unlock_last"), "B's give-back freed it")
	} else {
		c := await(t, cCh, "C")
		require.NoError(t, c.err, "the next waiter gets the lock B gave back")
		require.Greater(t, tokenOf(t, c.ctx), handedTok)
		require.Equal(t, map[string]string{ownerOf(t, c.ctx): "1"}, env.Universal.HGetAll(ctx, name).Val())
		require.NoError(t, mu.Unlock(c.ctx))
		require.Zero(t, env.Universal.Exists(ctx, name).Val())
	}
	// A fresh owner gets in.
	fresh, err := mu.TryLock(ctx)
	require.NoError(t, err)
	require.NoError(t, mu.Unlock(fresh))
}

func cancelledRacingUnlock(t *testing.T, env *redistest.Env) {
	ctx := ctxT(t)
	const name = "giveback-race"
	preload(t, env.Universal)
	log := newScriptLog(t)
	log.delay = time.Millisecond
	env.Universal.AddHook(log)
	mu := lock.New(env.Universal, name)
	outcomes := map[string]int{}
	for i := range 50 {
		next := i%2 == 1
		base := log.answered("acquire")
		a, err := mu.Lock(ctx)
		require.NoError(t, err)
		bctx, cancelB := context.WithCancel(ctx)
		bCh := lockAsync(mu, bctx)
		// Should B not be idle yet, A's release goes through Redis: the
		// assertions below hold all the same.
		waitIdle(t, log, base+3, time.Millisecond)
		var cCh <-chan acquired
		if next {
			cCh = lockAsync(mu, ctx)
			time.Sleep(time.Millisecond)
		}
		handOffsBefore := len(log.replies(t, "transfer"))

		aDone := make(chan error, 1)
		go func() { aDone <- mu.Unlock(a) }()
		time.Sleep(time.Duration(rand.IntN(4000)) * time.Microsecond)
		cancelB()
		b := await(t, bCh, "B")
		require.NoError(t, <-aDone)
		handedToB := len(log.replies(t, "transfer")) > handOffsBefore
		switch {
		case b.err == nil:
			// B took the lock before it saw its context end: the hold
			// ends with that context, released in the background;
			// Unlock waits for that release.
			outcomes["b-acquired"]++
			require.NoError(t, mu.Unlock(b.ctx))
		case handedToB:
			outcomes["b-gave-back"]++
			require.ErrorIs(t, b.err, context.Canceled)
		default:
			outcomes["b-left"]++
			require.ErrorIs(t, b.err, context.Canceled)
		}
		if next {
			c := await(t, cCh, fmt.Sprintf("iteration %d: C", i))
			require.NoError(t, c.err, "iteration %d", i)
			require.NoError(t, mu.Unlock(c.ctx))
		}
		require.Zero(t, env.Universal.Exists(ctx, name).Val(), "iteration %d: the lock is stuck: %v", i, env.Universal.HGetAll(ctx, name).Val())
		fresh, err := mu.TryLock(ctx)
		require.NoError(t, err, "iteration %d", i)
		require.NoError(t, mu.Unlock(fresh))
		cancelB()
	}
	t.Logf("outcomes: %v", outcomes)
}

// TestUnlockLastFallsBackWhenRedisHoldsMore: Redis holds a count the
// process did not know of; the last local unlock decrements it (through
// unlock.lua) instead of deleting the lock.
func TestUnlockLastFallsBackWhenRedisHoldsMore(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		const name = "extra"
		preload(t, env.Universal)
		log := newScriptLog(t)
		env.Universal.AddHook(log)
		watch := watchChannel(t, env, channelOf(name))
		mu := lock.New(env.Universal, name)
		held, err := mu.Lock(ctx)
		require.NoError(t, err)
		id := ownerOf(t, held)
		require.EqualValues(t, 2, env.Universal.HIncrBy(ctx, name, id, 1).Val())

		require.NoError(t, mu.Unlock(held))
		require.Equal(t, map[string]string{id: "1"}, env.Universal.HGetAll(ctx, name).Val(), "decremented, not deleted")
		require.Equal(t, [][]int64{{-2}}, log.replies(t, "unlock_last"))
		require.Equal(t, [][]int64{{0}}, log.replies(t, "unlock"))
		require.Greater(t, env.Universal.PTTL(ctx, name).Val(), 20*time.Second, "the lease is re-applied")
		require.Empty(t, watch.since(), "not freed: no unlock message")
		_, err = mu.TryLock(ctx)
		require.ErrorIs(t, err, lock.ErrNotAcquired)
		require.ErrorIs(t, mu.Unlock(held), lock.ErrNotHeld)
		require.NoError(t, env.Universal.Del(ctx, name).Err())
	})
}

// TestUnlockLastFallsBackWhenRedisHoldsMoreWithWaiter: the same with a
// local waiter: transfer.lua refuses (-2, nothing changed), unlock.lua
// decrements, and the waiter keeps waiting until the lock is freed.
func TestUnlockLastFallsBackWhenRedisHoldsMoreWithWaiter(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		const name = "extra-waiter"
		preload(t, env.Universal)
		log := newScriptLog(t)
		env.Universal.AddHook(log)
		mu := lock.New(env.Universal, name)
		held, err := mu.Lock(ctx)
		require.NoError(t, err)
		id := ownerOf(t, held)
		bCh := lockAsync(mu, ctx)
		waitIdle(t, log, 3, 20*time.Millisecond)
		require.EqualValues(t, 2, env.Universal.HIncrBy(ctx, name, id, 1).Val())
		tok := mustInt64(t, env.Universal.Get(ctx, tokenKeyOf(name)))

		require.NoError(t, mu.Unlock(held))
		require.Equal(t, [][]int64{{-2, 0}}, log.replies(t, "transfer"))
		require.Equal(t, [][]int64{{0}}, log.replies(t, "unlock"))
		require.Equal(t, map[string]string{id: "1"}, env.Universal.HGetAll(ctx, name).Val())
		require.Equal(t, tok, mustInt64(t, env.Universal.Get(ctx, tokenKeyOf(name))), "no token drawn")
		select {
		case r := <-bCh:
			t.Fatalf("B returned while the count Redis held remains: %v", r.err)
		default:
		}

		ok, err := mu.ForceUnlock(ctx)
		require.NoError(t, err)
		require.True(t, ok)
		b := await(t, bCh, "B")
		require.NoError(t, b.err)
		require.Equal(t, map[string]string{ownerOf(t, b.ctx): "1"}, env.Universal.HGetAll(ctx, name).Val())
		require.NoError(t, mu.Unlock(b.ctx))
		require.Zero(t, env.Universal.Exists(ctx, name).Val())
	})
}

// TestTransferScriptIdempotent runs transfer.lua twice with the same
// arguments, as a retry whose first reply was lost does.
func TestTransferScriptIdempotent(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		transfer := luaScript(t, "transfer")
		const name = "xfer"
		keys := []string{name, tokenKeyOf(name)}
		run := func(from, to string) []int64 {
			vals, err := transfer.Run(ctx, env.Universal, keys, from, to, 30000).Int64Slice()
			require.NoError(t, err)
			return vals
		}
		require.NoError(t, env.Universal.HSet(ctx, name, "ownerA", 1).Err())
		require.NoError(t, env.Universal.PExpire(ctx, name, 10*time.Second).Err())
		require.NoError(t, env.Universal.Set(ctx, tokenKeyOf(name), 5, 0).Err())

		first := run("ownerA", "ownerB")
		require.Len(t, first, 2)
		require.EqualValues(t, 1, first[0])
		require.Greater(t, first[1], int64(5), "the token follows the counter")
		require.Equal(t, first, run("ownerA", "ownerB"), "the retry answers the same")
		require.Equal(t, map[string]string{"ownerB": "1"}, env.Universal.HGetAll(ctx, name).Val())
		require.Equal(t, first[1], mustInt64(t, env.Universal.Get(ctx, tokenKeyOf(name))), "one token drawn")
		pttl := env.Universal.PTTL(ctx, name).Val()
		require.Greater(t, pttl, 20*time.Second, "the next owner's lease")
		require.LessOrEqual(t, pttl, 30*time.Second)

		// Not held by the releaser, nor by the next owner: nothing done.
		require.Equal(t, []int64{-1, 0}, run("ownerA", "ownerC"))
		require.Equal(t, map[string]string{"ownerB": "1"}, env.Universal.HGetAll(ctx, name).Val())
		// More than one count: nothing done, unlock.lua decrements.
		require.NoError(t, env.Universal.HSet(ctx, name, "ownerB", 2).Err())
		require.Equal(t, []int64{-2, 0}, run("ownerB", "ownerC"))
		require.Equal(t, map[string]string{"ownerB": "2"}, env.Universal.HGetAll(ctx, name).Val())
		require.Equal(t, first[1], mustInt64(t, env.Universal.Get(ctx, tokenKeyOf(name))))
		// Free lock: not held.
		require.NoError(t, env.Universal.Del(ctx, name).Err())
		require.Equal(t, []int64{-1, 0}, run("ownerA", "ownerB"))
		require.Zero(t, env.Universal.Exists(ctx, name).Val())
	})
}

// TestUnlockLastScript: 1 released (and published), -3 not held with no
// loss shown (a retry), -1 not held after a loss (the counter gone, or the
// owner in a force unlock's record), -2 more than one count (unchanged).
func TestUnlockLastScript(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		unlockLast := luaScript(t, "unlock_last")
		const name = "ulast"
		watch := watchChannel(t, env, channelOf(name))
		run := func(id string) int64 {
			n, err := unlockLast.Run(ctx, env.Universal, []string{name, channelOf(name), tokenKeyOf(name), forcedKeyOf(name)}, 0, id, publishCmd(env)).Int64()
			require.NoError(t, err)
			return n
		}
		require.NoError(t, env.Universal.HSet(ctx, name, "owner", 1).Err())
		require.EqualValues(t, 1, run("owner"))
		require.Zero(t, env.Universal.Exists(ctx, name).Val())
		require.Equal(t, []string{"0"}, watch.since())
		require.EqualValues(t, -1, run("owner"), "the field gone, and the counter too: a flush")
		require.NoError(t, env.Universal.Set(ctx, tokenKeyOf(name), 7, time.Hour).Err())
		require.EqualValues(t, -3, run("owner"), "a retry finds the field gone, and no loss")
		require.NoError(t, env.Universal.HSet(ctx, forcedKeyOf(name), "owner", 1).Err())
		require.EqualValues(t, -1, run("owner"), "the field gone by a force unlock")
		require.NoError(t, env.Universal.Del(ctx, forcedKeyOf(name)).Err())
		require.Empty(t, watch.since(), "and publishes nothing")

		require.NoError(t, env.Universal.HSet(ctx, name, "owner", 2).Err())
		require.EqualValues(t, -2, run("owner"))
		require.Equal(t, map[string]string{"owner": "2"}, env.Universal.HGetAll(ctx, name).Val())
		require.EqualValues(t, -3, run("other"), "another owner's release (no loss shown: Unlock reads its lease)")
		require.Equal(t, map[string]string{"owner": "2"}, env.Universal.HGetAll(ctx, name).Val())
		require.Empty(t, watch.since())
	})
}

// TestHandOffFencingTokensUnderContention: 8 goroutines × 50 sections on
// one lock (one client: most releases are hand-offs; two clients: a mix
// with releases through Redis). Sections never overlap and their tokens
// strictly increase in the order the sections ran.
func TestHandOffFencingTokensUnderContention(t *testing.T) {
	for _, clients := range []int{1, 2} {
		t.Run(fmt.Sprintf("clients=%d", clients), func(t *testing.T) {
			each(t, func(t *testing.T, env *redistest.Env) {
				ctx := ctxT(t)
				const name, goroutines, perG = "fenced", 8, 50
				preload(t, env.Universal)
				log := newScriptLog(t)
				env.Universal.AddHook(log)
				mus := []*lock.Mutex{lock.New(env.Universal, name)}
				if clients == 2 {
					c2 := env.NewClient(t)
					mus = append(mus, lock.New(c2, name))
				}
				type section struct {
					token       int64
					enter, exit time.Time
				}
				var (
					mu       sync.Mutex
					sections []section
					inside   atomic.Int32
					overlaps atomic.Int32
					wg       sync.WaitGroup
				)
				for g := range goroutines {
					m := mus[g%len(mus)]
					wg.Add(1)
					go func() {
						defer wg.Done()
						for range perG {
							held, err := m.Lock(ctx)
							if err != nil {
								t.Errorf("goroutine %d: %v", g, err)
								return
							}
							enter := time.Now()
							if inside.Add(1) != 1 {
								overlaps.Add(1)
							}
							tok, ok := lock.FencingToken(held)
							if !ok {
								t.Errorf("goroutine %d: no token", g)
							}
							inside.Add(-1)
							exit := time.Now()
							if err := m.Unlock(held); err != nil {
								t.Errorf("goroutine %d unlock: %v", g, err)
								return
							}
							mu.Lock()
							sections = append(sections, section{tok, enter, exit})
							mu.Unlock()
						}
					}()
				}
				wg.Wait()
				require.Zero(t, overlaps.Load())
				require.Len(t, sections, goroutines*perG)
				sort.Slice(sections, func(i, j int) bool { return sections[i].enter.Before(sections[j].enter) })
				for i := 1; i < len(sections); i++ {
					p, s := sections[i-1], sections[i]
					require.False(t, s.enter.Before(p.exit), "sections %d and %d overlap", i-1, i)
					require.Greater(t, s.token, p.token, "section %d's token after section %d's", i, i-1)
				}
				tokens := make([]int64, len(sections))
				for i, s := range sections {
					tokens[i] = s.token
				}
				require.Equal(t, len(tokens), len(slices.Compact(slices.Clone(tokens))), "tokens are unique")
				require.Equal(t, sections[len(sections)-1].token, mustInt64(t, env.Universal.Get(ctx, tokenKeyOf(name))))
				seq := log.releases(t)
				t.Logf("releases on the first client: %d hand-offs, %d through Redis", strings.Count(seq, "T"), strings.Count(seq, "U"))
				if clients == 1 {
					require.Positive(t, strings.Count(seq, "T"), "the hand-off path ran")
				}
				require.Zero(t, env.Universal.Exists(ctx, name).Val())
			})
		})
	}
}

// TestHandOffTransferRetriedAfterLostReply: the reply of the transfer is
// lost after Redis ran it; the release retries, the retry answers the
// same token and changes nothing, and the waiter gets the lock.
func TestHandOffTransferRetriedAfterLostReply(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		const name = "xfer-lost"
		preload(t, env.Universal)
		log := newScriptLog(t)
		env.Universal.AddHook(log)
		watch := watchChannel(t, env, channelOf(name))
		mu := lock.New(env.Universal, name)
		a, err := mu.Lock(ctx)
		require.NoError(t, err)
		bCh := lockAsync(mu, ctx)
		waitIdle(t, log, 3, 20*time.Millisecond)

		var lost atomic.Int32
		gate := func(ev *scriptEvent, sent bool) {
			if ev.name == "transfer" && sent && lost.Add(1) == 1 {
				log.lose(ev)
			}
		}
		log.gate.Store(&gate)
		aTok := tokenOf(t, a) // while A holds it
		require.NoError(t, mu.Unlock(a))
		b := await(t, bCh, "B")
		require.NoError(t, b.err)
		require.EqualValues(t, 2, lost.Load(), "the transfer was sent again")
		bTok := tokenOf(t, b.ctx)
		require.Greater(t, bTok, aTok)
		require.Equal(t, [][]int64{{1, bTok}}, log.replies(t, "transfer"), "the retry answered the first run's token")
		require.Equal(t, bTok, mustInt64(t, env.Universal.Get(ctx, tokenKeyOf(name))), "one token drawn")
		require.Equal(t, map[string]string{ownerOf(t, b.ctx): "1"}, env.Universal.HGetAll(ctx, name).Val())
		require.Empty(t, watch.since())
		require.NoError(t, mu.Unlock(b.ctx))
		require.Zero(t, env.Universal.Exists(ctx, name).Val())
	})
}

// TestUnlockLastRetriedAfterLostReply: the reply of unlock_last.lua is
// lost after Redis ran it; the retry answers -3 (the field is gone, and
// Redis shows no loss), which Unlock reads as released, since the lease
// was not lost.
func TestUnlockLastRetriedAfterLostReply(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		const name = "ulast-lost"
		preload(t, env.Universal)
		log := newScriptLog(t)
		env.Universal.AddHook(log)
		watch := watchChannel(t, env, channelOf(name))
		mu := lock.New(env.Universal, name)
		held, err := mu.Lock(ctx)
		require.NoError(t, err)
		var lost atomic.Int32
		gate := func(ev *scriptEvent, sent bool) {
			if ev.name == "unlock_last" && sent && lost.Add(1) == 1 {
				log.lose(ev)
			}
		}
		log.gate.Store(&gate)
		require.NoError(t, mu.Unlock(held), "a retried release is not a lost lock")
		require.EqualValues(t, 2, lost.Load(), "unlock_last was sent again")
		require.Equal(t, [][]int64{{-3}}, log.replies(t, "unlock_last"))
		require.Zero(t, env.Universal.Exists(ctx, name).Val())
		require.Equal(t, []string{"0"}, watch.since(), "published once, by the first run")
		other, err := mu.TryLock(ctx)
		require.NoError(t, err)
		require.NoError(t, mu.Unlock(other))
	})
}

// TestHandOffChainBoundSurvivesDrainedQueue: two goroutines pass the lock
// back and forth, each queueing only once the other holds it, so that the
// local queue empties at every hand-off. The bound still holds: after
// MaxHandOffs hand-offs in a row, a release goes through Redis (where
// waiters of other processes could take the lock).
func TestHandOffChainBoundSurvivesDrainedQueue(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		const name = "drained"
		preload(t, env.Universal)
		log := newScriptLog(t)
		env.Universal.AddHook(log)
		mu := lock.New(env.Universal, name)
		passAlong(ctx, t, mu, log, 2*core.MaxHandOffs+2, 0)
		seq := log.releases(t)
		require.LessOrEqual(t, longestChain(seq), core.MaxHandOffs, "hand-offs in a row past the bound: %s", seq)
	})
}

// TestHandOffChainBoundedInTime: with critical sections long enough that
// MaxHandOffs of them would keep the lock in one process for a long
// while, the chain ends once it has lasted MaxHandOffTime: a release then
// goes through Redis, where waiters of other processes race for it.
func TestHandOffChainBoundedInTime(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		const name = "chaintime"
		const section = 20 * time.Millisecond
		preload(t, env.Universal)
		log := newScriptLog(t)
		env.Universal.AddHook(log)
		mu := lock.New(env.Universal, name)
		passAlong(ctx, t, mu, log, 12, section)
		seq := log.releases(t)
		longest := longestChain(seq)
		t.Logf("releases %s", seq)
		// A chain's hand-offs after its first come at least a section
		// apart, so no more than MaxHandOffTime/section+1 fit in one.
		limit := int(core.MaxHandOffTime/section) + 1
		require.LessOrEqual(t, longest, limit, "hand-offs in a row past the time bound: %s", seq)
		require.Positive(t, strings.Count(seq, "T"), "no hand-off at all: %s", seq)
		require.Greater(t, strings.Count(seq, "U"), 2, "no chain ended through Redis: %s", seq)
	})
}

// TestHandOffRefusedWaiterIsWoken: an unlock message reaches a waiter
// while a release is reserving it (its try is refused), and the hand-off
// then fails (the releaser's hold is gone: ForceUnlock): End(Refused) must
// wake the waiter, which finds the lock free, instead of leaving it asleep
// until its fallback timer.
func TestHandOffRefusedWaiterIsWoken(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		const name = "swallowed"
		preload(t, env.Universal)
		log := newScriptLog(t)
		env.Universal.AddHook(log)
		mu := lock.New(env.Universal, name)

		a, err := mu.Lock(ctx)
		require.NoError(t, err)
		bCh := lockAsync(mu, ctx)
		waitIdle(t, log, 3, 20*time.Millisecond)

		entered, release := make(chan struct{}), make(chan struct{})
		var once sync.Once
		gate := func(ev *scriptEvent, sent bool) {
			if ev.name == "transfer" && !sent {
				once.Do(func() { close(entered); <-release })
			}
		}
		log.gate.Store(&gate)
		aDone := make(chan error, 1)
		go func() { aDone <- mu.Unlock(a) }()
		<-entered // B is reserved; the transfer has not reached Redis
		admin := lock.New(env.Universal, name)
		ok, err := admin.ForceUnlock(context.Background()) // publishes: B is kicked while reserved
		require.NoError(t, err)
		require.True(t, ok)
		time.Sleep(50 * time.Millisecond)
		close(release)
		t.Logf("A's unlock: %v", <-aDone)
		select {
		case r := <-bCh:
			require.NoError(t, r.err)
			require.Equal(t, map[string]string{ownerOf(t, r.ctx): "1"}, env.Universal.HGetAll(ctx, name).Val())
			require.NoError(t, mu.Unlock(r.ctx))
		case <-time.After(3 * time.Second):
			t.Fatalf("the lock has been free for 3 s and its only waiter was never woken (acquire tries: %d)", log.answered("acquire"))
		}
	})
}

// passAlong takes mu, then n times queues a next holder (on an empty
// queue: a try, join, a try), holds for section and unlocks, so that each
// release may hand over; the last holder unlocks at the end.
func passAlong(ctx context.Context, t *testing.T, mu *lock.Mutex, log *scriptLog, n int, section time.Duration) {
	t.Helper()
	cur, err := mu.Lock(ctx)
	require.NoError(t, err)
	for i := range n {
		base := log.answered("acquire")
		next := lockAsync(mu, ctx)
		waitIdle(t, log, base+2, 5*time.Millisecond)
		time.Sleep(section)
		require.NoError(t, mu.Unlock(cur))
		r := await(t, next, fmt.Sprintf("section %d", i))
		require.NoError(t, r.err)
		cur = r.ctx
	}
	require.NoError(t, mu.Unlock(cur))
}

// longestChain is the longest run of hand-offs (T) between releases
// through Redis (U) in a release sequence.
func longestChain(seq string) int {
	longest := 0
	for run := range strings.SplitSeq(seq, "U") {
		longest = max(longest, len(run))
	}
	return longest
}
