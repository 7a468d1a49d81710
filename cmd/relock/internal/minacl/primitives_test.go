package minacl_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/cmd/relock/internal/minacl"
	"github.com/relock-go/relock/internal/testkit/redistest"
	"github.com/relock-go/relock/lock"
	"github.com/relock-go/relock/redlock"
	"github.com/relock-go/relock/rwlock"
	"github.com/relock-go/relock/semaphore"
)

// setUser makes user on the server behind admin with exactly rules.
func setUser(t *testing.T, ctx context.Context, admin *redis.Client, user string, rules []string) *redis.Client {
	t.Helper()
	args := []any{"acl", "setuser", user, "reset", "on", ">pw"}
	for _, r := range rules {
		args = append(args, r)
	}
	require.NoError(t, admin.Do(ctx, args...).Err())
	c := redis.NewClient(&redis.Options{Addr: admin.Options().Addr, Username: user, Password: "pw"})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// exercise runs p through c on names under "app:" the way a service
// would: a hold, a re-entry where there is one, a second owner that waits
// and is woken by the release, the inspections, a forced release. Each
// step runs through do; the first error ends it. A lease > 0 is a fixed
// lease for every hold (each package takes options of its own).
func exercise(ctx context.Context, p minacl.Primitive, c redis.UniversalClient, do stepFunc, lease time.Duration) error {
	opts := []lock.Option{lock.WithHolderLabel("pod-1")}
	rwOpts := []rwlock.Option{rwlock.WithHolderLabel("pod-1")}
	semOpts := []semaphore.Option{semaphore.WithHolderLabel("pod-1")}
	if lease > 0 {
		opts = append(opts, lock.WithLeaseTime(lease))
		rwOpts = append(rwOpts, rwlock.WithLeaseTime(lease))
		semOpts = append(semOpts, semaphore.WithLeaseTime(lease))
	}
	wait := func(take func(ctx context.Context) error) chan error {
		ch := make(chan error, 1)
		go func() { ch <- take(ctx) }()
		time.Sleep(100 * time.Millisecond) // it finds the hold taken and waits
		return ch
	}
	switch p {
	case minacl.Lock, minacl.FairLock:
		mu := lock.New(c, "app:job", opts...)
		if p == minacl.FairLock {
			mu = lock.NewFair(c, "app:job", opts...)
		}
		return exerciseLock(ctx, mu, do, wait)
	case minacl.RWLock:
		return exerciseRW(ctx, rwlock.New(c, "app:doc", rwOpts...), do, wait)
	case minacl.Semaphore:
		return exerciseSemaphore(ctx, semaphore.New(c, "app:pool", 2, semOpts...), do, wait)
	}
	return fmt.Errorf("no scenario for %s", p)
}

type stepFunc = func(name string, f func() error) error
type waitFunc = func(take func(ctx context.Context) error) chan error

func exerciseLock(ctx context.Context, mu *lock.Mutex, do stepFunc, wait waitFunc) error {
	var held, inner context.Context
	var err error
	if err := do("lock", func() error { held, err = mu.Lock(ctx); return err }); err != nil {
		return err
	}
	if err := do("re-enter", func() error { inner, err = mu.Lock(held); return err }); err != nil {
		return err
	}
	if err := do("unlock re-entry", func() error { return mu.Unlock(inner) }); err != nil {
		return err
	}
	if err := do("inspect", func() error { return inspect(ctx, mu.IsLocked, mu.TTL) }); err != nil {
		return err
	}
	var second context.Context
	got := wait(func(ctx context.Context) error { second, err = mu.Lock(ctx); return err })
	if err := do("unlock to a waiter", func() error { return mu.Unlock(held) }); err != nil {
		return err
	}
	if err := do("waiter woken", func() error { return <-got }); err != nil {
		return err
	}
	if err := do("unlock", func() error { return mu.Unlock(second) }); err != nil {
		return err
	}
	return do("force unlock", func() error { _, err := mu.ForceUnlock(ctx); return err })
}

func inspect(ctx context.Context, locked func(context.Context) (bool, error), ttl func(context.Context) (time.Duration, error)) error {
	if _, err := locked(ctx); err != nil {
		return err
	}
	_, err := ttl(ctx)
	return err
}

func exerciseRW(ctx context.Context, rw *rwlock.RWMutex, do stepFunc, wait waitFunc) error {
	var r1, r2, w context.Context
	var err error
	if err := do("read lock", func() error { r1, err = rw.RLock(ctx); return err }); err != nil {
		return err
	}
	if err := do("second reader", func() error { r2, err = rw.RLock(context.Background()); return err }); err != nil {
		return err
	}
	got := wait(func(ctx context.Context) error { w, err = rw.Lock(ctx); return err })
	if err := do("read unlock", func() error { return rw.RUnlock(r1) }); err != nil {
		return err
	}
	if err := do("last read unlock", func() error { return rw.RUnlock(r2) }); err != nil {
		return err
	}
	if err := do("writer woken", func() error { return <-got }); err != nil {
		return err
	}
	if err := do("inspect", func() error { return inspect(ctx, rw.IsLocked, rw.TTL) }); err != nil {
		return err
	}
	if err := do("write unlock", func() error { return rw.Unlock(w) }); err != nil {
		return err
	}
	return do("force unlock", func() error { _, err := rw.ForceUnlock(ctx); return err })
}

func exerciseSemaphore(ctx context.Context, s *semaphore.Semaphore, do stepFunc, wait waitFunc) error {
	var a, b context.Context
	var err error
	if err := do("acquire", func() error { a, err = s.Acquire(ctx, 2); return err }); err != nil {
		return err
	}
	got := wait(func(ctx context.Context) error { b, err = s.Acquire(ctx, 1); return err })
	if err := do("release to a waiter", func() error { return s.Release(a) }); err != nil {
		return err
	}
	if err := do("waiter woken", func() error { return <-got }); err != nil {
		return err
	}
	if err := do("available", func() error { _, err := s.Available(ctx); return err }); err != nil {
		return err
	}
	if err := do("release", func() error { return s.Release(b) }); err != nil {
		return err
	}
	return do("force release", func() error { _, err := s.ForceRelease(ctx); return err })
}

// A user granted exactly the README's ACL for its primitive, on names
// under "app:", runs it: holds, re-entries, waiters woken by releases,
// inspections and forced releases, replica sync on (the default), on a
// server without replicas and on one with a replica.
func TestMinimalACLRunsEveryPrimitive(t *testing.T) {
	for _, replicas := range []int{0, 1} {
		t.Run(fmt.Sprintf("replicas=%d", replicas), func(t *testing.T) {
			ctx := ctxT(t)
			g := redistest.StartReplicated(t, replicas)
			admin := g.Master.Client(t)
			for _, p := range []minacl.Primitive{minacl.Lock, minacl.FairLock, minacl.RWLock, minacl.Semaphore} {
				t.Run(string(p), func(t *testing.T) {
					acl := minacl.For(p, "app:", minacl.Deployment{ReplicaSync: true})
					c := setUser(t, ctx, admin, "u"+strings.ReplaceAll(string(p), " ", ""), acl.Rules())
					var step string
					do := func(name string, f func() error) error { step = name; return f() }
					require.NoError(t, exercise(ctx, p, c, do, 0), "step %s with %s", step, acl)
					require.Empty(t, keyspaceUnder(t, ctx, admin), "nothing left")
				})
			}
		})
	}
}

// keyspaceUnder is the keys left of the exercises, but the fencing
// counter and the latches, which expire on their own within seconds.
func keyspaceUnder(t *testing.T, ctx context.Context, admin *redis.Client) []string {
	t.Helper()
	var left []string
	for k := range redistest.Keyspace(t, ctx, admin) {
		if strings.Contains(k, "app:") && !strings.HasPrefix(k, "redisson_lock_token:") && !strings.Contains(k, "_latch:") {
			left = append(left, k)
		}
	}
	return left
}

// A Redlock over three servers, each with a user of exactly the Redlock
// ACL (a lock's, on every member's server).
func TestMinimalACLRunsRedlock(t *testing.T) {
	ctx := ctxT(t)
	acl := minacl.For(minacl.Redlock, "app:", minacl.Deployment{ReplicaSync: true})
	var members []redlock.Member
	for range 3 {
		s := redistest.StartServer(t)
		c := setUser(t, ctx, s.Client(t), "redlock", acl.Rules())
		members = append(members, lock.New(c, "app:batch"))
	}
	rl := redlock.New(members)
	held, err := rl.Lock(ctx)
	require.NoError(t, err, "with %s", acl)
	_, err = redlock.New(members).TryLock(ctx)
	require.ErrorIs(t, err, lock.ErrNotAcquired)
	require.NoError(t, rl.Unlock(held))
}

// optional are the permissions the exercise on a single server without
// replicas, on names without a hash tag of their own, can do without:
// HELLO or AUTH (go-redis falls back from one to the other), INFO or ROLE
// (either counts the replicas), WAIT (no replica to wait for), PING (the
// pub/sub health check, after minutes), SCRIPT LOAD (renewals after a
// restart), UNSUBSCRIBE (an idle subscription, later), what only a
// waiter that gives up (LREM), a refused replica sync (LPUSH), a re-entry
// through a latch (the acquire latch of an rwlock) or a write release that
// hands the read lock to local readers (ZCOUNT) runs, a semaphore's line
// whose marks have no TTL (HVALS),
// the holder label's key (a label that cannot be written is left out, by
// design: it only informs), and the patterns of names with a hash tag.
func optional(p minacl.Primitive, rule string) bool {
	switch rule {
	case "+hello", "+auth", "+info", "+role", "+wait", "+ping", "+script|load", "+unsubscribe",
		"~relock_holder:{app:*":
		return true
	case "+lrem", "+lpush", "+incr": // a fair lock draws its tokens as rwlock does, not with INCR
		return p == minacl.FairLock
	case "+zcount", "~relock_acquire_latch:{app:*":
		return p == minacl.RWLock
	case "+hexists", "+hvals":
		return p == minacl.Semaphore // ForceRelease of a semaphore already gone; marks without a TTL
	}
	return (rule[0] == '~' || rule[0] == '&') && strings.Contains(rule, ":app:")
}

// Each permission of the minimal ACL taken away in turn: the primitive
// fails at the first step that needs it, with an error that names the
// command refused (NOPERM and the key or channel for a pattern), and
// that step leaves the keyspace as it found it.
func TestEachPermissionRemovedIsNamed(t *testing.T) {
	ctx := ctxT(t)
	s := redistest.StartServer(t)
	admin := s.Client(t)
	t.Cleanup(func() { time.Sleep(1500 * time.Millisecond) }) // the last holds lapse
	for _, p := range []minacl.Primitive{minacl.Lock, minacl.FairLock, minacl.RWLock, minacl.Semaphore} {
		rules := minacl.For(p, "app:", minacl.Deployment{ReplicaSync: true}).Rules()
		for i, rule := range rules {
			if !strings.ContainsAny(rule[:1], "+~&") {
				continue
			}
			t.Run(string(p)+"/"+rule, func(t *testing.T) {
				require.NoError(t, admin.FlushAll(ctx).Err())
				require.NoError(t, admin.ScriptFlush(ctx).Err()) // EVAL is needed to load them
				c := setUser(t, ctx, admin, fmt.Sprintf("u%d", i), append(rules[:i:i], rules[i+1:]...))
				var step string
				var before, after map[string]string
				do := func(name string, f func() error) error {
					step, before = name, redistest.Keyspace(t, ctx, admin)
					err := f()
					if err != nil {
						after = redistest.Keyspace(t, ctx, admin)
					}
					return err
				}
				// A fixed lease: the holds a refused release leaves behind
				// lapse before the test ends.
				err := exercise(ctx, p, c, do, time.Second)
				if err == nil {
					require.True(t, optional(p, rule), "%s is needed, yet the exercise ran without it", rule)
					return
				}
				require.Equal(t, marks(before), marks(after), "step %s changed the keyspace before it failed: %v", step, err)
				if rule == "+type" && strings.HasPrefix(step, "force") {
					return // the forced release's script asks nothing beforehand: Redis's own refusal
				}
				require.ErrorContains(t, err, "NOPERM", "step %s", step)
				if rule[0] == '+' {
					require.Contains(t, strings.ToLower(err.Error()), rule[1:], "the error names the command (step %s)", step)
				}
			})
		}
	}
}

// marks is ks without the keys a live waiter keeps rewriting while
// another step runs (its place in line and its deadline): what the step
// itself wrote is left.
func marks(ks map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range ks {
		// A refused acquisition may have drawn a token, and kept it in its
		// latch: tokens promise to increase, not to be consecutive, a latch
		// lapses in seconds, and no hold changed.
		if !strings.HasPrefix(k, "redisson_lock_token:") && !strings.HasPrefix(k, "relock_acquire_latch:") &&
			!strings.HasSuffix(k, ":waiter_expiry") && !strings.HasSuffix(k, ":waiters") &&
			!strings.HasPrefix(k, "redisson_lock_timeout:") && !strings.HasPrefix(k, "relock_fair_waiter:") &&
			!strings.HasPrefix(k, "redisson_lock_queue:") && !strings.HasSuffix(k, ":rwlock_write_waiters") {
			out[k] = v
		}
	}
	return out
}

// On Redis Cluster the ACL adds what the cluster client reads (the slot
// map, the command table) and the sharded pub/sub commands in place of
// PUBLISH and SUBSCRIBE.
func TestMinimalACLOnCluster(t *testing.T) {
	ctx := ctxT(t)
	env := redistest.ClusterBackend().New(t)
	for _, p := range []minacl.Primitive{minacl.Lock, minacl.FairLock, minacl.RWLock, minacl.Semaphore} {
		t.Run(string(p), func(t *testing.T) {
			acl := minacl.For(p, "app:", minacl.Deployment{Cluster: true, ReplicaSync: true})
			e := redistest.NewACLEnv(t, ctx, env, "c"+strings.ReplaceAll(string(p), " ", ""), acl.Rules()...)
			var step string
			do := func(name string, f func() error) error { step = name; return f() }
			require.NoError(t, exercise(ctx, p, e.User, do, 0), "step %s with %s", step, acl)
		})
	}
}
