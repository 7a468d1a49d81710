package lock_test

import (
	"context"
	"errors"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/testkit/history"
	"github.com/relock-go/relock/internal/testkit/redistest"
	"github.com/relock-go/relock/lock"
)

const (
	fairQueue    = "redisson_lock_queue:{fair}"
	fairTimeouts = "redisson_lock_timeout:{fair}"
	fairGrants   = "relock_fair_waiter:{fair}"
)

// queued is the fair lock's waiter list.
func queued(t *testing.T, ctx context.Context, c redis.UniversalClient) []string {
	t.Helper()
	ids, err := c.LRange(ctx, fairQueue, 0, -1).Result()
	require.NoError(t, err)
	return ids
}

// awaitQueued waits until the list holds n waiters.
func awaitQueued(t *testing.T, ctx context.Context, c redis.UniversalClient, n int) {
	t.Helper()
	require.Eventually(t, func() bool {
		got, err := c.LLen(ctx, fairQueue).Result()
		return err == nil && got == int64(n)
	}, 10*time.Second, 2*time.Millisecond, "%d waiters queued", n)
}

// Waiters of several clients (processes) are served in the order they
// queued, whoever wakes first; the history holds no overlap and rising
// tokens; every key left has a TTL.
func TestFairOrderAcrossClients(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		admin := env.U()
		holder := lock.NewFair(admin, "fair")
		held, err := holder.Lock(ctx)
		require.NoError(t, err)

		const n = 6
		hist := history.New()
		var mu sync.Mutex
		var order []int
		var wg sync.WaitGroup
		for i := range n {
			c := env.NewClient(t) // its own process
			wg.Add(1)
			go func() {
				defer wg.Done()
				m := lock.NewFair(c, "fair")
				h, err := m.Lock(ctx)
				if !assertNoError(t, err) {
					return
				}
				got := time.Now()
				mu.Lock()
				order = append(order, i)
				mu.Unlock()
				time.Sleep(2 * time.Millisecond)
				tok, _ := lock.FencingToken(h)
				hist.Add(history.Hold{Lock: "fair", Owner: "", Kind: history.Exclusive, Token: tok, HasToken: true, Acquired: got, Released: time.Now()})
				assertNoError(t, m.Unlock(h))
			}()
			awaitQueued(t, ctx, admin, i+1) // i queued before i+1 arrives
		}
		require.NoError(t, holder.Unlock(held))
		wg.Wait()
		require.Equal(t, []int{0, 1, 2, 3, 4, 5}, order, "first come, first served")
		require.NoError(t, hist.Err())
		require.Empty(t, queued(t, ctx, admin))
		redistest.RequireBoundedKeyspace(t, ctx, admin, time.Hour)
	})
}

func assertNoError(t *testing.T, err error) bool {
	t.Helper()
	if err != nil {
		t.Error(err)
		return false
	}
	return true
}

// TryLock takes a free lock only when nobody waits for it, and never
// takes a place in the line; a waiter that gives up leaves the line at
// once and wakes the next.
func TestFairTryLockAndGivingUp(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		admin := env.U()
		holder := lock.NewFair(admin, "fair")
		held, err := holder.Lock(ctx)
		require.NoError(t, err)

		_, err = lock.NewFair(env.NewClient(t), "fair").TryLock(ctx)
		require.ErrorIs(t, err, lock.ErrNotAcquired)
		require.Empty(t, queued(t, ctx, admin), "TryLock takes no place")

		// A waiter whose bound passes leaves the list and the zset.
		_, err = lock.NewFair(env.NewClient(t), "fair").Lock(ctx, lock.WithWaitTimeout(150*time.Millisecond))
		require.ErrorIs(t, err, lock.ErrNotAcquired)
		require.Empty(t, queued(t, ctx, admin))
		n, err := admin.ZCard(ctx, fairTimeouts).Result()
		require.NoError(t, err)
		require.Zero(t, n)

		// One waits; once the lock is free, TryLock must not pass it.
		first := env.NewClient(t)
		got := lockAsync(lock.NewFair(first, "fair"), ctx)
		awaitQueued(t, ctx, admin, 1)
		require.NoError(t, holder.Unlock(held))
		r := await(t, got, "first waiter")
		require.NoError(t, r.err)
		_, err = lock.NewFair(env.NewClient(t), "fair").TryLock(ctx)
		require.ErrorIs(t, err, lock.ErrNotAcquired)
		require.NoError(t, lock.NewFair(first, "fair").Unlock(r.ctx))

		// A cancelled waiter at the head of the line wakes the next one
		// when the lock is free.
		held, err = holder.Lock(ctx)
		require.NoError(t, err)
		cctx, cancel := context.WithCancel(ctx)
		quitterClient := env.NewClient(t)
		quitter := lockAsync(lock.NewFair(quitterClient, "fair"), cctx)
		awaitQueued(t, ctx, admin, 1)
		second := env.NewClient(t)
		next := lockAsync(lock.NewFair(second, "fair"), ctx)
		awaitQueued(t, ctx, admin, 2)
		require.NoError(t, holder.Unlock(held))
		// The quitter may take the lock before it quits: then it holds it.
		cancel()
		if q := <-quitter; q.err == nil {
			require.NoError(t, lock.NewFair(quitterClient, "fair").Unlock(q.ctx))
		} else {
			require.True(t, errors.Is(q.err, context.Canceled), q.err)
		}
		start := time.Now()
		r = await(t, next, "next waiter")
		require.NoError(t, r.err)
		t.Logf("the next waiter took the lock %v after the quit", time.Since(start))
		require.NoError(t, lock.NewFair(second, "fair").Unlock(r.ctx))
		require.Empty(t, queued(t, ctx, admin))
	})
}

// A waiter that died while queued (its place left behind, its deadline
// no longer renewed) holds the line back no longer than its mark life.
func TestFairDeadWaiterSkipped(t *testing.T) {
	eachSingle(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		admin := env.U()
		holder := lock.NewFair(admin, "fair")
		held, err := holder.Lock(ctx)
		require.NoError(t, err)
		// What a killed process leaves: its place and a deadline 3 s away.
		now, err := admin.Time(ctx).Result()
		require.NoError(t, err)
		dead := "00000000-0000-0000-0000-000000000000:1"
		require.NoError(t, admin.RPush(ctx, fairQueue, dead).Err())
		require.NoError(t, admin.ZAdd(ctx, fairTimeouts, redis.Z{Score: float64(now.Add(3 * time.Second).UnixMilli()), Member: dead}).Err())
		// A relock waiter: the release writes its hold, with a TTL of its
		// deadline, which nobody renews.
		require.NoError(t, admin.HSet(ctx, fairGrants, dead, "30000:"+dead+"-owner").Err())

		live := env.NewClient(t)
		got := lockAsync(lock.NewFair(live, "fair"), ctx)
		awaitQueued(t, ctx, admin, 2)
		released := time.Now()
		require.NoError(t, holder.Unlock(held))
		// miniredis's TTLs move only when told: a second per half second.
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		bound := time.After(10 * time.Second)
		for done := false; !done; {
			select {
			case r := <-got:
				require.NoError(t, r.err)
				delay := time.Since(released)
				t.Logf("the live waiter took the lock %v after the release", delay)
				require.Less(t, delay, 5*time.Second)
				require.NoError(t, lock.NewFair(live, "fair").Unlock(r.ctx))
				done = true
			case <-tick.C:
				if env.Mini != nil {
					env.FastForward(time.Second)
				}
			case <-bound:
				t.Fatal("the dead waiter held the line")
			}
		}
		require.Empty(t, queued(t, ctx, admin))
	})
}

// A release in one process writes the hold of the first waiter when it is
// relock's, in another process: the waiter takes it without a try, and its
// watchdog renews the provisional TTL to its lease at once.
func TestFairGrantAcrossProcesses(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		admin := env.U()
		waiter := env.NewClient(t)
		// A client learns whether the server has replicas from its first
		// call; until then its waiters are listed to be woken, not granted
		// (replica sync may ask for a WAIT a grant would not have).
		warm := lock.NewFair(waiter, "fair")
		wh, err := warm.Lock(ctx)
		require.NoError(t, err)
		require.NoError(t, warm.Unlock(wh))
		holder := lock.NewFair(admin, "fair")
		held, err := holder.Lock(ctx)
		require.NoError(t, err)
		got := lockAsync(lock.NewFair(waiter, "fair", lock.WithWatchdogTimeout(20*time.Second)), ctx)
		awaitQueued(t, ctx, admin, 1)
		id := queued(t, ctx, admin)[0]
		granted, err := admin.HExists(ctx, fairGrants, id).Result()
		require.NoError(t, err)
		require.True(t, granted, "a relock waiter is listed for a grant")
		// What the release tells the waiter, heard beside it.
		spy, err := redistest.Subscribe(ctx, env.NewClient(t), "redisson_lock__channel:{fair}:"+id)
		require.NoError(t, err)
		defer spy.Close()
		require.NoError(t, holder.Unlock(held))
		r := await(t, got, "waiter")
		require.NoError(t, r.err)
		tok, ok := lock.FencingToken(r.ctx)
		require.True(t, ok)
		select {
		case msg := <-spy.Channel():
			m := regexp.MustCompile(`^relock:grant:(\d+):(\d+):(.+)$`).FindStringSubmatch(msg.Payload)
			require.NotNil(t, m, "grant message %q", msg.Payload)
			require.Equal(t, strconv.FormatInt(tok, 10), m[1], "the waiter holds the token the release drew")
			// The hold is the waiter's owner's, not its seat's.
			require.NotEqual(t, id, m[3])
			holds, err := admin.HExists(ctx, "fair", m[3]).Result()
			require.NoError(t, err)
			require.True(t, holds, "the grant names the owner whose hold the release wrote")
		case <-time.After(5 * time.Second):
			t.Fatal("no message on the waiter's channel")
		}
		if env.Mini == nil { // miniredis's TTLs do not run
			require.Eventually(t, func() bool {
				ttl, err := admin.PTTL(ctx, "fair").Result()
				return err == nil && ttl > 5*time.Second
			}, 3*time.Second, 10*time.Millisecond, "the watchdog renewed the provisional TTL to the lease")
		}
		require.NoError(t, lock.NewFair(waiter, "fair").Unlock(r.ctx))
		require.Empty(t, queued(t, ctx, admin))
		n, err := admin.Exists(ctx, fairGrants).Result()
		require.NoError(t, err)
		require.Zero(t, n)
	})
}

// Many waiters of several clients in a loop: no two holds overlap, tokens
// rise, and every client gets its turns (hand-offs within a client, grants
// across clients, tries for the rest all at work).
// TestFairContendedWaiterTriesOnce: a fair lock's waiter whose last
// acquisition found the lock taken subscribes to its channel before its
// first try, so that it waits on one try instead of two (a try, the
// subscription, and a try again for a release it could not have heard).
func TestFairContendedWaiterTriesOnce(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		holder := lock.NewFair(env.NewClient(t), "fair")
		c := env.NewClient(t)
		log := newScriptLog(t)
		c.AddHook(log)
		waiter := lock.NewFair(c, "fair")

		// tries returns how many times the waiter ran the acquire script
		// in a Lock that waited for the holder.
		tries := func() int {
			h, err := holder.Lock(ctx)
			require.NoError(t, err)
			before := log.answered("fair_acquire")
			got := make(chan context.Context, 1)
			go func() {
				wh, err := waiter.Lock(ctx)
				assertNoError(t, err)
				got <- wh
			}()
			awaitQueued(t, ctx, env.U(), 1)
			require.NoError(t, holder.Unlock(h))
			wh := <-got
			require.NotNil(t, wh)
			n := log.answered("fair_acquire") - before
			require.NoError(t, waiter.Unlock(wh))
			return n
		}
		require.Equal(t, 2, tries(), "the first wait: a try, the subscription, a try")
		require.Equal(t, 1, tries(), "the next: the subscription, then one try")
		require.Equal(t, 1, tries())

		// A free lock is taken at the first try either way.
		for range 2 {
			before := log.answered("fair_acquire")
			h, err := waiter.Lock(ctx)
			require.NoError(t, err)
			require.Equal(t, 1, log.answered("fair_acquire")-before)
			require.NoError(t, waiter.Unlock(h))
		}
		require.Empty(t, queued(t, ctx, env.U()))
	})
}

func TestFairContention(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		hist := history.New()
		var wg sync.WaitGroup
		stop := time.Now().Add(1500 * time.Millisecond)
		counts := make([]int, 16)
		var mu sync.Mutex
		var longest time.Duration
		for c := range 4 {
			client := env.NewClient(t)
			for g := range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					fair := lock.NewFair(client, "fair")
					for time.Now().Before(stop) {
						called := time.Now()
						h, err := fair.Lock(ctx)
						if !assertNoError(t, err) {
							return
						}
						got := time.Now()
						mu.Lock()
						longest = max(longest, got.Sub(called))
						mu.Unlock()
						tok, _ := lock.FencingToken(h)
						time.Sleep(100 * time.Microsecond)
						released := time.Now()
						if !assertNoError(t, fair.Unlock(h)) {
							return
						}
						hist.Add(history.Hold{Lock: "fair", Kind: history.Exclusive, Token: tok, HasToken: true, Acquired: got, Released: released})
						counts[c*4+g]++
					}
				}()
			}
		}
		wg.Wait()
		require.NoError(t, hist.Err())
		t.Logf("%d holds; per goroutine %v; longest wait %v", hist.Len(), counts, longest)
		// A waiter woken by nothing waits for its fallback, the 30 s lease.
		require.Less(t, longest, 10*time.Second, "a waiter missed its turn")
		for i, n := range counts {
			require.Positive(t, n, "goroutine %d never held the lock", i)
		}
		require.Empty(t, queued(t, ctx, env.U()))
		redistest.RequireBoundedKeyspace(t, ctx, env.U(), time.Hour)
	})
}
