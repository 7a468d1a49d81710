package relock_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock"
	"github.com/relock-go/relock/election"
	"github.com/relock-go/relock/internal/testkit/redistest"
	"github.com/relock-go/relock/lock"
	"github.com/relock-go/relock/rwlock"
	"github.com/relock-go/relock/semaphore"
)

// kind is one primitive that can hold a name: take holds it through
// client c (its hold lasts the test), try asks for it once.
type kind struct {
	name string // as the refusal names it
	take func(ctx context.Context, c redis.UniversalClient, name string) error
}

func kinds() []kind {
	lockTake := func(ctx context.Context, c redis.UniversalClient, name string) error {
		_, err := lock.New(c, name).TryLock(ctx)
		return err
	}
	return []kind{
		{"a lock", lockTake},
		{"a lock", func(ctx context.Context, c redis.UniversalClient, name string) error {
			_, err := lock.NewFair(c, name).TryLock(ctx)
			return err
		}},
		{"a lock", func(ctx context.Context, c redis.UniversalClient, name string) error {
			// a Campaign waits: on a held name it must be refused at
			// once, not time out
			cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			defer cancel()
			_, err := election.New(c, name).Campaign(cctx, "v")
			return err
		}},
		{"an rwlock", func(ctx context.Context, c redis.UniversalClient, name string) error {
			_, err := rwlock.New(c, name).TryLock(ctx)
			return err
		}},
		{"an rwlock", func(ctx context.Context, c redis.UniversalClient, name string) error {
			_, err := rwlock.New(c, name).TryRLock(ctx)
			return err
		}},
		{"a semaphore", func(ctx context.Context, c redis.UniversalClient, name string) error {
			_, err := semaphore.New(c, name, 1).TryAcquire(ctx, 1)
			return err
		}},
	}
}

// TestOneNameOneKind: while one kind of primitive holds a name, every
// acquisition of another kind through a second client is refused with
// ErrWrongKind (which matches ErrNotAcquired), names the holder's kind,
// and writes nothing; waiting acquisitions are refused at once.
func TestOneNameOneKind(t *testing.T) {
	redistest.ForBackends(t, func(t *testing.T, env *redistest.Env) {
		ctx := context.Background()
		ks := kinds()
		holders := []int{0, 1, 2, 3, 4, 5} // lock, fair, election, write, read, semaphore
		type refused struct {
			i, h    int
			scripts *scriptCount
		}
		var tries []refused
		for _, h := range holders {
			for i, k := range ks {
				if ks[h].name == k.name {
					continue // same kind: plain, fair and election share the lock's hash
				}
				name := "kind:" + string(rune('a'+h)) + string(rune('a'+i))
				first, second := env.NewClient(t), env.NewClient(t)
				scripts := &scriptCount{}
				second.AddHook(scripts)
				if err := ks[h].take(ctx, first, name); err != nil {
					t.Fatalf("holder %d of %q: %v", h, name, err)
				}
				before, err := dump(ctx, first, name)
				if err != nil {
					t.Fatal(err)
				}
				start := time.Now()
				err = k.take(ctx, second, name)
				if took := time.Since(start); took > time.Second {
					t.Errorf("%d on %d's name: refused after %v, not at once", i, h, took)
				}
				if !errors.Is(err, relock.ErrWrongKind) || !errors.Is(err, relock.ErrNotAcquired) {
					t.Errorf("%d on %d's name: got %v, want ErrWrongKind", i, h, err)
					continue
				}
				if !strings.Contains(err.Error(), ks[h].name) || !strings.Contains(err.Error(), name) {
					t.Errorf("%d on %d's name: %q names neither the holder's kind %q nor the name", i, h, err, ks[h].name)
				}
				after, err := dump(ctx, first, name)
				if err != nil {
					t.Fatal(err)
				}
				if before != after {
					t.Errorf("%d on %d's name: the hash changed:\nbefore %s\nafter  %s", i, h, before, after)
				}
				if i != 2 { // a Campaign also withdraws what it waits on
					tries = append(tries, refused{i, h, scripts})
				}
			}
		}
		// One script ran, and it answered: a refused try has nothing to
		// give back, now or in the background.
		time.Sleep(200 * time.Millisecond)
		for _, r := range tries {
			if n := r.scripts.ran.Load(); n != 1 {
				t.Errorf("%d on %d's name: %d scripts ran, want the one try", r.i, r.h, n)
			}
		}
	})
}

// scriptCount counts the scripts a client ran (NOSCRIPT replies aside,
// which the EVAL after them replaces).
type scriptCount struct{ ran atomic.Int32 }

func (*scriptCount) DialHook(next redis.DialHook) redis.DialHook { return next }

func (*scriptCount) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (s *scriptCount) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if n := cmd.Name(); (n == "evalsha" || n == "eval") && (err == nil || !strings.HasPrefix(err.Error(), "NOSCRIPT")) {
			s.ran.Add(1)
		}
		return err
	}
}

// dump is the name's hash and the names of its other keys, sorted, for
// comparing before and after a refused acquisition. A refused try may
// write neither a latch nor a token, so those are kept out.
func dump(ctx context.Context, c redis.UniversalClient, name string) (string, error) {
	fields, err := c.HGetAll(ctx, name).Result()
	if err != nil {
		return "", err
	}
	keys, err := redistest.Keys(ctx, c, "*"+name+"*")
	if err != nil {
		return "", err
	}
	var parts []string
	for f, v := range fields {
		parts = append(parts, f+"="+v)
	}
	for _, k := range keys {
		parts = append(parts, "key "+k)
	}
	slices.Sort(parts)
	return strings.Join(parts, " "), nil
}
