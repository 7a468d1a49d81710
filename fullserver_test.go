package relock_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/election"
	"github.com/relock-go/relock/internal/testkit/redistest"
	"github.com/relock-go/relock/lock"
	"github.com/relock-go/relock/rwlock"
	"github.com/relock-go/relock/semaphore"
)

// fullLease is the watchdog timeout of the holds taken before the server
// fills: renewed every 300 ms, so that 3 leases pass in under 3 s.
const fullLease = 900 * time.Millisecond

// held is one hold of a kind, with its release.
type held struct {
	name    string
	ctx     context.Context
	release func() error
}

// takers take a hold of each kind on name through c, as holds that live
// before the server fills and as new acquisitions after.
func takers(c redis.UniversalClient) map[string]func(ctx context.Context, name string) (held, error) {
	return map[string]func(ctx context.Context, name string) (held, error){
		"lock": func(ctx context.Context, name string) (held, error) {
			mu := lock.New(c, name, lock.WithWatchdogTimeout(fullLease))
			h, err := mu.TryLock(ctx)
			return held{name, h, func() error { return mu.Unlock(h) }}, err
		},
		"fair lock": func(ctx context.Context, name string) (held, error) {
			mu := lock.NewFair(c, name, lock.WithWatchdogTimeout(fullLease))
			h, err := mu.TryLock(ctx)
			return held{name, h, func() error { return mu.Unlock(h) }}, err
		},
		"write lock": func(ctx context.Context, name string) (held, error) {
			rw := rwlock.New(c, name, rwlock.WithWatchdogTimeout(fullLease))
			h, err := rw.TryLock(ctx)
			return held{name, h, func() error { return rw.Unlock(h) }}, err
		},
		"read lock": func(ctx context.Context, name string) (held, error) {
			rw := rwlock.New(c, name, rwlock.WithWatchdogTimeout(fullLease))
			h, err := rw.TryRLock(ctx)
			return held{name, h, func() error { return rw.RUnlock(h) }}, err
		},
		"semaphore": func(ctx context.Context, name string) (held, error) {
			s := semaphore.New(c, name, 2, semaphore.WithWatchdogTimeout(fullLease))
			h, err := s.TryAcquire(ctx, 1)
			return held{name, h, func() error { return s.Release(h) }}, err
		},
		"election": func(ctx context.Context, name string) (held, error) {
			e := election.New(c, name, election.WithWatchdogTimeout(fullLease))
			cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			defer cancel()
			h, err := e.Campaign(cctx, "v")
			return held{name, h, func() error { return e.Resign(h) }}, err
		},
	}
}

// TestFullServer: a server at maxmemory with noeviction refuses what
// would grow its memory. Holds taken before it filled are renewed through
// 3 leases and released, re-entered ones one count at a time; every new
// acquisition of every kind fails with Redis's OOM reply, and writes
// nothing, on a fresh name and, for a read lock, a semaphore and a
// re-entry, on one already held.
func TestFullServer(t *testing.T) {
	srv := redistest.StartServer(t)
	admin := srv.Client(t)
	c := srv.Client(t)
	ctx := context.Background()
	take := takers(c)
	holds := map[string]held{}
	for kind, f := range take {
		h, err := f(ctx, "full:"+kind)
		if err != nil {
			t.Fatalf("%s before the server filled: %v", kind, err)
		}
		holds[kind] = h
	}
	inner := reenter(t, c, holds)
	if err := admin.ConfigSet(ctx, "maxmemory", "1").Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.ConfigSet(context.Background(), "maxmemory", "0").Err() })
	before, err := admin.DBSize(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}

	for kind, f := range take {
		requireOOM(t, kind+" on a fresh name", "new:"+kind, f)
	}
	// a second owner of what is held, where it could share it
	requireOOM(t, "read lock beside a reader", "full:read lock", take["read lock"])
	requireOOM(t, "semaphore beside a holder", "full:semaphore", take["semaphore"])
	mu := lock.New(c, "full:lock", lock.WithWatchdogTimeout(fullLease))
	if _, err := mu.TryLock(holds["lock"].ctx); err == nil || !strings.Contains(err.Error(), "OOM") {
		t.Errorf("re-entry on a full server: %v, want OOM", err)
	}
	if after, err := admin.DBSize(ctx).Result(); err != nil || after != before {
		t.Errorf("keys before the refused acquisitions %d, after %d (%v)", before, after, err)
	}

	time.Sleep(3 * fullLease)
	for kind, h := range holds {
		if err := context.Cause(h.ctx); err != nil {
			t.Errorf("%s held through 3 leases on a full server: %v", kind, err)
		}
	}
	for kind, h := range inner {
		if err := h.release(); err != nil {
			t.Errorf("%s's inner count released on a full server: %v", kind, err)
		}
	}
	for kind, h := range holds {
		if err := h.release(); err != nil {
			t.Errorf("%s released on a full server: %v", kind, err)
		}
	}
}

// reenter takes a second count of the lock, write lock and read lock held,
// through their holds' contexts.
func reenter(t *testing.T, c redis.UniversalClient, holds map[string]held) map[string]held {
	t.Helper()
	mu := lock.New(c, "full:lock", lock.WithWatchdogTimeout(fullLease))
	w := rwlock.New(c, "full:write lock", rwlock.WithWatchdogTimeout(fullLease))
	r := rwlock.New(c, "full:read lock", rwlock.WithWatchdogTimeout(fullLease))
	inner := map[string]held{}
	for kind, take := range map[string]func() (context.Context, func(context.Context) error, error){
		"lock": func() (context.Context, func(context.Context) error, error) {
			h, err := mu.TryLock(holds["lock"].ctx)
			return h, mu.Unlock, err
		},
		"write lock": func() (context.Context, func(context.Context) error, error) {
			h, err := w.TryLock(holds["write lock"].ctx)
			return h, w.Unlock, err
		},
		"read lock": func() (context.Context, func(context.Context) error, error) {
			h, err := r.TryRLock(holds["read lock"].ctx)
			return h, r.RUnlock, err
		},
	} {
		h, release, err := take()
		if err != nil {
			t.Fatalf("%s re-entered before the server filled: %v", kind, err)
		}
		inner[kind] = held{kind, h, func() error { return release(h) }}
	}
	return inner
}

func requireOOM(t *testing.T, what, name string, f func(ctx context.Context, name string) (held, error)) {
	t.Helper()
	start := time.Now()
	h, err := f(context.Background(), name)
	if err == nil {
		_ = h.release()
		t.Errorf("%s: acquired on a full server", what)
		return
	}
	if !strings.Contains(err.Error(), "OOM") {
		t.Errorf("%s: %v, want Redis's OOM reply", what, err)
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("%s: refused after %v, not at once", what, took)
	}
}
