package lock_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock"
	"github.com/relock-go/relock/internal/telemetry/telemetrytest"
	"github.com/relock-go/relock/internal/testkit/redistest"
	"github.com/relock-go/relock/lock"
	"github.com/relock-go/relock/rwlock"
	"github.com/relock-go/relock/semaphore"
	"github.com/relock-go/relock/tracing"
)

// waitCalls is the number of WAIT commands the server has run.
func waitCalls(t *testing.T, ctx context.Context, c *redis.Client) int {
	t.Helper()
	n, err := redistest.CommandCalls(ctx, c, "wait")
	require.NoError(t, err)
	return n
}

// pipelines records the commands of every pipeline a client sends.
type pipelines struct {
	mu   sync.Mutex
	seen [][]string
}

func (p *pipelines) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (p *pipelines) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (p *pipelines) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		names := make([]string, len(cmds))
		for i, c := range cmds {
			names[i] = c.Name()
		}
		p.mu.Lock()
		p.seen = append(p.seen, names)
		p.mu.Unlock()
		return next(ctx, cmds)
	}
}

// withWait counts the pipelines that carried a script and its WAIT.
func (p *pipelines) withWait() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, cmds := range p.seen {
		if len(cmds) >= 2 && strings.HasPrefix(cmds[0], "eval") && cmds[1] == "wait" {
			n++
		}
	}
	return n
}

// acquireAll takes and gives back every kind of hold once on c: a lock
// and its re-entry, a read and a write lock, semaphore permits. A sync
// given is each primitive's WithReplicaSync.
func acquireAll(t *testing.T, ctx context.Context, c redis.UniversalClient, sync ...time.Duration) {
	t.Helper()
	var opts []lock.Option
	var rwOpts []rwlock.Option
	var semOpts []semaphore.Option
	for _, d := range sync {
		opts = append(opts, lock.WithReplicaSync(d))
		rwOpts = append(rwOpts, rwlock.WithReplicaSync(d))
		semOpts = append(semOpts, semaphore.WithReplicaSync(d))
	}
	mu := lock.New(c, "job", opts...)
	held, err := mu.TryLock(ctx)
	require.NoError(t, err)
	inner, err := mu.Lock(held)
	require.NoError(t, err)
	require.NoError(t, mu.Unlock(inner))
	require.NoError(t, mu.Unlock(held))

	rw := rwlock.New(c, "doc", rwOpts...)
	r, err := rw.RLock(ctx)
	require.NoError(t, err)
	require.NoError(t, rw.RUnlock(r))
	w, err := rw.Lock(ctx)
	require.NoError(t, err)
	require.NoError(t, rw.Unlock(w))

	sem := semaphore.New(c, "pool", 3, semOpts...)
	p, err := sem.Acquire(ctx, 2)
	require.NoError(t, err)
	require.NoError(t, sem.Release(p))
}

// Replica sync sends WAIT, in the script's round trip, where the server
// has replicas, and never where it has none.
func TestReplicaSyncWaitsOnlyWithReplicas(t *testing.T) {
	ctx := ctxT(t)
	t.Run("no replica", func(t *testing.T) {
		s := redistest.StartServer(t)
		c := s.Client(t)
		acquireAll(t, ctx, c)
		require.Zero(t, waitCalls(t, ctx, c), "a server without replicas runs no WAIT")
	})
	t.Run("one replica", func(t *testing.T) {
		g := redistest.StartReplicated(t, 1)
		c := g.Master.Client(t)
		var p pipelines
		c.AddHook(&p)
		acquireAll(t, ctx, c)
		// The lock, its re-entry, the read and write locks, the permits.
		// The first round loaded the scripts (NOSCRIPT, then EVAL and its
		// WAIT again); the second sends each once.
		before, pipes := waitCalls(t, ctx, c), p.withWait()
		acquireAll(t, ctx, c)
		// The lock, its re-entry, the read and write locks, the permits.
		require.Equal(t, 5, waitCalls(t, ctx, c)-before)
		require.Equal(t, 5, p.withWait()-pipes, "each WAIT rides on its script's pipeline")

		before = waitCalls(t, ctx, c)
		acquireAll(t, ctx, c, 0)
		require.Equal(t, before, waitCalls(t, ctx, c), "WithReplicaSync(0) sends no WAIT")
	})
}

// With the replica stalled, an acquisition is refused within the sync
// timeout as not replicated, and leaves no hold behind; replica sync off,
// the same acquisition is granted at once, known to the master only.
func TestReplicaSyncStalledReplica(t *testing.T) {
	ctx := ctxT(t)
	g := redistest.StartReplicated(t, 1)
	c := g.Master.Client(t)
	const timeout = 300 * time.Millisecond
	synced := lock.WithReplicaSync(timeout)

	// Learn the replica count while the replica answers.
	acquireAll(t, ctx, c, timeout)
	g.Replicas[0].Pause(t)

	requireRefused := func(err error, took time.Duration) {
		t.Helper()
		require.ErrorIs(t, err, lock.ErrNotReplicated)
		require.ErrorIs(t, err, lock.ErrNotAcquired)
		require.ErrorContains(t, err, "0 of 1 replicas acknowledged")
		require.GreaterOrEqual(t, took, timeout, "WAIT waited its timeout")
		require.Less(t, took, 10*timeout, "refused within the timeout, not hung")
		var rerr *relock.Error
		require.True(t, errors.As(err, &rerr))
	}
	start := time.Now()
	_, err := lock.New(c, "job", synced).TryLock(ctx)
	requireRefused(err, time.Since(start))
	require.Contains(t, err.Error(), `"job"`)

	start = time.Now()
	_, err = rwlock.New(c, "doc", rwlock.WithReplicaSync(timeout)).TryLock(ctx)
	requireRefused(err, time.Since(start))
	start = time.Now()
	_, err = rwlock.New(c, "doc", rwlock.WithReplicaSync(timeout)).TryRLock(ctx)
	requireRefused(err, time.Since(start))
	start = time.Now()
	_, err = semaphore.New(c, "pool", 3, semaphore.WithReplicaSync(timeout)).TryAcquire(ctx, 2)
	requireRefused(err, time.Since(start))

	// A waiting Lock tries again until its wait bound, then says why.
	start = time.Now()
	_, err = lock.New(c, "job", synced).Lock(ctx, lock.WithWaitTimeout(4*timeout))
	require.ErrorIs(t, err, lock.ErrNotAcquired)
	require.ErrorIs(t, err, lock.ErrNotReplicated)
	require.GreaterOrEqual(t, time.Since(start), 4*timeout)

	// Nothing is held: only the fencing counters (which never go back)
	// and the latches of the give-backs (which answer a resend) remain,
	// each with its TTL. (A try that the wait bound cut short is given
	// back in the background, once it has returned.)
	var keys []string
	require.Eventually(t, func() bool {
		var err error
		keys, err = c.Keys(ctx, "*").Result()
		return err == nil && !slices.ContainsFunc(keys, func(k string) bool { return k == "job" || k == "doc" || k == "pool" })
	}, 5*time.Second, 10*time.Millisecond, "a lock is left held: %v", keys)
	for _, k := range keys {
		require.True(t, strings.HasPrefix(k, "redisson_lock_token:") || strings.HasPrefix(k, "redisson_unlock_latch:") || strings.HasPrefix(k, "relock_acquire_latch:"), "key %q left behind", k)
		ttl, err := c.PTTL(ctx, k).Result()
		require.NoError(t, err)
		require.Positive(t, ttl, k)
	}

	// What replica sync is for: without it the grant comes at once, and
	// the replica does not have it.
	held, err := lock.New(c, "job", lock.WithReplicaSync(0)).TryLock(ctx)
	require.NoError(t, err)
	defer func() { require.NoError(t, lock.New(c, "job").Unlock(held)) }()

	// The replica back in sync, a waiting Lock of another name succeeds.
	g.Replicas[0].Resume()
	g.WaitInSync(t, 20*time.Second)
	other, err := lock.New(c, "other", synced).Lock(ctx)
	require.NoError(t, err)
	require.NoError(t, lock.New(c, "other").Unlock(other))
}

// A waiter woken by a release whose acquisition is then refused for want
// of replicas gives the lock back: the waiters behind it are woken, and
// one of them takes it once the replica is back.
func TestReplicaSyncUndoWakesWaiters(t *testing.T) {
	ctx := ctxT(t)
	g := redistest.StartReplicated(t, 1)
	c := g.Master.Client(t)
	synced := lock.WithReplicaSync(200 * time.Millisecond)
	mu := lock.New(c, "job", synced)
	held, err := mu.Lock(ctx)
	require.NoError(t, err)

	other := g.Master.Client(t) // another process
	got := make(chan error, 1)
	go func() {
		h, err := lock.New(other, "job", synced).Lock(ctx, lock.WithWaitTimeout(15*time.Second))
		if err == nil {
			err = lock.New(other, "job").Unlock(h)
		}
		got <- err
	}()
	require.Eventually(t, func() bool {
		n, err := redistest.Subscribers(ctx, c, "redisson_lock__channel:{job}")
		return err == nil && n > 0
	}, 5*time.Second, 10*time.Millisecond)

	g.Replicas[0].Pause(t)
	require.NoError(t, mu.Unlock(held))
	// The waiter tries, is refused, gives the lock back and tries again,
	// granted nothing while the replica is stalled.
	select {
	case err := <-got:
		t.Fatalf("acquired while the replica was stalled: %v", err)
	case <-time.After(time.Second):
	}
	g.Replicas[0].Resume()
	require.NoError(t, <-got)
}

// A refusal for want of replicas is counted under its own outcome, and the
// acquire span says how many replicas acknowledged.
func TestReplicaSyncTelemetry(t *testing.T) {
	ctx := ctxT(t)
	g := redistest.StartReplicated(t, 1)
	c := g.Master.Client(t)
	r := telemetrytest.New(t)
	rec, tp := spanRecorder(t)
	opts := []lock.Option{lock.WithMeterProvider(r.Provider), lock.WithTracerProvider(tp), lock.WithReplicaSync(200 * time.Millisecond)}
	mu := lock.New(c, "job", opts...)
	held, err := mu.TryLock(ctx)
	require.NoError(t, err)
	require.NoError(t, mu.Unlock(held))

	g.Replicas[0].Pause(t)
	_, err = mu.TryLock(ctx)
	require.ErrorIs(t, err, lock.ErrNotReplicated)
	_, err = mu.Lock(ctx, lock.WithWaitTimeout(500*time.Millisecond))
	require.ErrorIs(t, err, lock.ErrNotReplicated)

	notReplicated := tracing.Outcome.String(tracing.OutcomeNotReplicated)
	require.EqualValues(t, 1, r.Sum(t, tracing.MetricAcquisitions, primLock, outAcquired))
	require.EqualValues(t, 2, r.Sum(t, tracing.MetricAcquisitions, primLock, notReplicated))

	var acked []int64
	for _, s := range rec.Ended() {
		if s.Name() != tracing.SpanAcquireLock {
			continue
		}
		for _, kv := range s.Attributes() {
			if kv.Key == tracing.ReplicasAcked {
				acked = append(acked, kv.Value.AsInt64())
			}
		}
	}
	require.Len(t, acked, 3, "each acquire span records its last try's acknowledgements")
	require.Equal(t, []int64{1, 0, 0}, acked)
}

// masterOf returns the index in masters of the master of key's slot.
func masterOf(t *testing.T, ctx context.Context, cc *redis.ClusterClient, masters []*redistest.Server, key string) int {
	t.Helper()
	node, err := cc.MasterForKey(ctx, key)
	require.NoError(t, err)
	for i, m := range masters {
		if m.Addr == node.Options().Addr {
			return i
		}
	}
	t.Fatalf("no master serves %q", key)
	return -1
}

// On a cluster with replicas, the WAIT goes to the master of the name's
// slot, on the script's connection, and a stalled replica of that master
// refuses the acquisition.
func TestReplicaSyncCluster(t *testing.T) {
	ctx := ctxT(t)
	cc, masters, replicas := redistest.StartClusterWithReplicas(t, 2)
	if cc == nil {
		return
	}
	owner := masterOf(t, ctx, cc, masters, "job")
	other := 1 - owner
	admin := func(i int) *redis.Client { return masters[i].Client(t) }
	acquireAll(t, ctx, cc) // loads the scripts
	before := []int{waitCalls(t, ctx, admin(0)), waitCalls(t, ctx, admin(1))}
	held, err := lock.New(cc, "job").TryLock(ctx)
	require.NoError(t, err)
	require.NoError(t, lock.New(cc, "job").Unlock(held))
	require.Equal(t, before[owner]+1, waitCalls(t, ctx, admin(owner)), "the slot's master ran the WAIT")
	require.Equal(t, before[other], waitCalls(t, ctx, admin(other)))

	replicas[owner].Pause(t)
	_, err = lock.New(cc, "job", lock.WithReplicaSync(200*time.Millisecond)).TryLock(ctx)
	require.ErrorIs(t, err, lock.ErrNotReplicated)
	n, err := cc.Exists(ctx, "job").Result()
	require.NoError(t, err)
	require.Zero(t, n)
}

// With two replicas and one of them stalled, the WAIT asks for the one
// acknowledgement required and returns as soon as the other replica gave
// it: the acquisition does not wait out the timeout. Asking for two, it is
// refused.
func TestReplicaSyncOneSlowReplicaOfTwo(t *testing.T) {
	ctx := ctxT(t)
	g := redistest.StartReplicated(t, 2)
	c := g.Master.Client(t)
	const timeout = 2 * time.Second
	mu := lock.New(c, "job", lock.WithReplicaSync(timeout), lock.WithMinReplicas(1))
	held, err := mu.TryLock(ctx) // learns the count while both answer
	require.NoError(t, err)
	require.NoError(t, mu.Unlock(held))

	g.Replicas[1].Pause(t)
	start := time.Now()
	held, err = mu.TryLock(ctx)
	took := time.Since(start)
	require.NoError(t, err)
	require.NoError(t, mu.Unlock(held))
	t.Logf("acquired in %v with one of two replicas stalled", took)
	require.Less(t, took, timeout/2, "the WAIT did not wait for the stalled replica")

	start = time.Now()
	_, err = lock.New(c, "job2", lock.WithReplicaSync(300*time.Millisecond), lock.WithMinReplicas(2)).TryLock(ctx)
	require.ErrorIs(t, err, lock.ErrNotReplicated)
	require.ErrorContains(t, err, "1 of 2 replicas acknowledged")
	require.GreaterOrEqual(t, time.Since(start), 300*time.Millisecond)
}

// A fair lock's first waiter whose acquisition is refused for want of
// replicas keeps its place at the head of the line: the waiter behind it
// does not pass it, and the two are served in order once the replica is
// back.
func TestReplicaSyncFairKeepsPlace(t *testing.T) {
	ctx := ctxT(t)
	g := redistest.StartReplicated(t, 1)
	admin := g.Master.Client(t)
	synced := lock.WithReplicaSync(200 * time.Millisecond)
	holder := lock.NewFair(g.Master.Client(t), "fair", synced)
	held, err := holder.Lock(ctx)
	require.NoError(t, err)

	type turn struct {
		who string
		err error
	}
	turns := make(chan turn, 2)
	var wg sync.WaitGroup
	defer wg.Wait() // the unlocks too
	wait := func(who string) {
		defer wg.Done()
		c := g.Master.Client(t)
		fair := lock.NewFair(c, "fair", synced)
		h, err := fair.Lock(ctx)
		turns <- turn{who, err}
		if err == nil {
			_ = fair.Unlock(h)
		}
	}
	wg.Add(2)
	go wait("first")
	awaitQueued(t, ctx, admin, 1)
	go wait("second")
	awaitQueued(t, ctx, admin, 2)

	g.Replicas[0].Pause(t)
	require.NoError(t, holder.Unlock(held))
	select {
	case tr := <-turns:
		t.Fatalf("%s acquired while the replica was stalled: %v", tr.who, tr.err)
	case <-time.After(time.Second):
	}
	g.Replicas[0].Resume()
	require.Equal(t, "first", (<-turns).who)
	require.Equal(t, "second", (<-turns).who)
}

// mixedTake takes a primitive on c with replica sync timeout sync (0:
// off), as a holder (first) or a waiter; release gives it back.
type mixedTake func(ctx context.Context, c redis.UniversalClient, sync time.Duration, first bool) (release func() error, err error)

func takeMutex(fair bool) mixedTake {
	return func(ctx context.Context, c redis.UniversalClient, sync time.Duration, _ bool) (func() error, error) {
		newMu := lock.New
		if fair {
			newMu = lock.NewFair
		}
		mu := newMu(c, "fair", lock.WithReplicaSync(sync))
		h, err := mu.Lock(ctx)
		return func() error { return mu.Unlock(h) }, err
	}
}

func takeRW(ctx context.Context, c redis.UniversalClient, sync time.Duration, first bool) (func() error, error) {
	rw := rwlock.New(c, "fair", rwlock.WithReplicaSync(sync))
	if first { // the writer; the waiter reads
		h, err := rw.Lock(ctx)
		return func() error { return rw.Unlock(h) }, err
	}
	h, err := rw.RLock(ctx)
	return func() error { return rw.RUnlock(h) }, err
}

func takeSem(ctx context.Context, c redis.UniversalClient, sync time.Duration, first bool) (func() error, error) {
	s := semaphore.New(c, "fair", 2, semaphore.WithReplicaSync(sync))
	n := int64(1)
	if first {
		n = 2
	}
	h, err := s.Acquire(ctx, n)
	return func() error { return s.Release(h) }, err
}

// A waiter with replica sync on is not handed the lock by a release made
// without it, in another process or by another value of its own: that
// release would write the waiter's hold with no WAIT after it. The waiter
// is woken to try, and its own try waits for the replica.
func TestReplicaSyncWaiterNotHandedByAnUnsyncedRelease(t *testing.T) {
	for _, tc := range []struct {
		name       string
		take       mixedTake
		sameClient bool // the release is local (one hub): a hand-off
		channel    string
	}{
		{"fair, another process", takeMutex(true), false, ""},
		{"fair, same process", takeMutex(true), true, ""},
		{"lock, same process", takeMutex(false), true, "redisson_lock__channel:{fair}"},
		{"rwlock reader, same process", takeRW, true, "redisson_rwlock:{fair}"},
		{"semaphore, same process", takeSem, true, "redisson_sc:{fair}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := ctxT(t)
			g := redistest.StartReplicated(t, 1)
			admin := g.Master.Client(t)
			hc := g.Master.Client(t)
			wc := hc
			if !tc.sameClient {
				wc = g.Master.Client(t)
			}
			release, err := tc.take(ctx, hc, 0, true)
			require.NoError(t, err)

			got := make(chan error, 1)
			var wg sync.WaitGroup
			defer wg.Wait()
			wg.Go(func() {
				rel, err := tc.take(ctx, wc, 200*time.Millisecond, false)
				got <- err
				if err == nil {
					_ = rel()
				}
			})
			if tc.channel == "" {
				awaitQueued(t, ctx, admin, 1)
			} else {
				require.Eventually(t, func() bool {
					n, err := admin.PubSubNumSub(ctx, tc.channel).Result()
					return err == nil && n[tc.channel] > 0
				}, 10*time.Second, 2*time.Millisecond, "the waiter never listened on %s", tc.channel)
				time.Sleep(50 * time.Millisecond) // its try over: it waits, idle
			}
			g.Replicas[0].Pause(t)
			require.NoError(t, release())
			select {
			case err := <-got:
				t.Fatalf("the synced waiter acquired while the replica was stalled: %v", err)
			case <-time.After(time.Second):
			}
			g.Replicas[0].Resume()
			require.NoError(t, <-got)
		})
	}
}

// A process that first meets a cluster's master while that master's
// replica is down (between a failover and the replica's return) refuses
// the acquisition, as a process that saw the replica before does: the
// cluster lists the replica, so the master's lone write could be thrown
// away. It is not taken for a cluster run without replicas.
func TestReplicaSyncClusterFirstMetWithoutItsReplica(t *testing.T) {
	ctx := ctxT(t)
	cc, masters, replicas := redistest.StartClusterWithReplicas(t, 2)
	if cc == nil {
		return
	}
	owner := masterOf(t, ctx, cc, masters, "job")
	admin := masters[owner].Client(t)
	replicas[owner].Kill()
	require.Eventually(t, func() bool {
		info, err := admin.Info(ctx, "replication").Result()
		return err == nil && strings.Contains(info, "connected_slaves:0")
	}, 10*time.Second, 10*time.Millisecond)

	fresh := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{masters[owner].Addr}})
	t.Cleanup(func() { _ = fresh.Close() })
	_, err := lock.New(fresh, "job").TryLock(ctx)
	require.ErrorIs(t, err, lock.ErrNotReplicated)
	n, err := admin.Exists(ctx, "job").Result()
	require.NoError(t, err)
	require.Zero(t, n, "nothing written")
}

// A replica sync timeout is refused only when the client's read timeout
// would cut its WAIT short: a client that never times out reads (-1)
// takes any.
func TestReplicaSyncAgainstTheClientsReadTimeout(t *testing.T) {
	for _, tc := range []struct {
		readTimeout time.Duration // as given to go-redis (0: its default, 5 s)
		refused     bool
	}{{-1, false}, {-2, false}, {0, true}, {2 * time.Second, true}, {10 * time.Second, false}} {
		c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", ReadTimeout: tc.readTimeout})
		err := lock.New(c, "job", lock.WithReplicaSync(5*time.Second)).Err()
		if tc.refused {
			assert.ErrorIs(t, err, relock.ErrInvalidArgument, "read timeout %v", tc.readTimeout)
			assert.ErrorContains(t, err, "cut the WAIT short", "read timeout %v", tc.readTimeout)
		} else {
			assert.NoError(t, err, "read timeout %v", tc.readTimeout)
		}
		require.NoError(t, c.Close())
	}
}
