package rwlock_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/core"
	"github.com/relock-go/relock/internal/scripts"
	"github.com/relock-go/relock/internal/testkit/history"
	"github.com/relock-go/relock/internal/testkit/redistest"
	"github.com/relock-go/relock/rwlock"
)

// histHold is a hold in progress: what it was, since when.
type histHold struct {
	name     string
	held     context.Context
	kind     history.Kind
	acquired time.Time
}

// histRelease releases x (through release, called right away) and records
// [x.acquired, now) when the release succeeded: a hold whose release fails
// was lost, did not last until now on the server, and fails the test.
func histRelease(t *testing.T, h *history.History, x histHold, release func(context.Context) error) {
	released := time.Now()
	if err := release(x.held); err != nil {
		t.Errorf("release %s %q: %v", x.kind, x.name, err)
		return
	}
	histAdd(h, x, released)
}

func histAdd(h *history.History, x histHold, released time.Time) {
	id, _ := core.Owner(x.held)
	tok, ok := rwlock.FencingToken(x.held)
	h.Add(history.Hold{Lock: x.name, Owner: id, Kind: x.kind, Token: tok, HasToken: ok, Acquired: x.acquired, Released: released})
}

// histLeftovers lists the keys left that are not the fencing counters or
// unlock latches of names (which outlive a hold on purpose).
func histLeftovers(t *testing.T, c redis.UniversalClient, names ...string) []string {
	t.Helper()
	ks, err := c.Keys(context.Background(), "*").Result()
	require.NoError(t, err)
	var left []string
	for _, k := range ks {
		ok := false
		for _, name := range names {
			if k == scripts.Prefix("redisson_lock_token", name) || strings.HasPrefix(k, scripts.Prefix("redisson_unlock_latch", name)+":") ||
				strings.HasPrefix(k, scripts.Prefix("relock_acquire_latch", name)+":") {
				ok = true
			}
		}
		if !ok {
			left = append(left, k)
		}
	}
	return left
}

// TestHistoryRWMutexContention: two processes of six goroutines each read
// and write a few locks (readers re-enter, writers read inside their write
// hold or downgrade, a reader's upgrade is refused) and record every hold;
// the record must show no writer overlapping another owner's hold and the
// fencing tokens of the package history's rules.
func TestHistoryRWMutexContention(t *testing.T) {
	for _, b := range redistest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			env := b.New(t)
			procs := []redis.UniversalClient{env.Client, env.NewClient(t)}
			names := []string{"hist:rw:a", "hist:rw:{b}"}
			const perProc, iters = 6, 15
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()

			h := history.New()
			var reads, writes, downgrades atomic.Int64
			var wg sync.WaitGroup
			for p, c := range procs {
				for g := range perProc {
					rng := rand.New(rand.NewPCG(uint64(p), uint64(g)))
					wg.Go(func() {
						for range iters {
							name := names[rng.IntN(len(names))]
							rw := rwlock.New(c, name)
							pause := func() { time.Sleep(time.Duration(rng.IntN(300)) * time.Microsecond) }
							if rng.IntN(3) > 0 {
								if !histReader(t, h, rw, ctx, rng, pause) {
									return
								}
								reads.Add(1)
								continue
							}
							held, err := rw.Lock(ctx)
							if err != nil {
								t.Errorf("lock %q: %v", name, err)
								return
							}
							w := histHold{name, held, history.Exclusive, time.Now()}
							switch rng.IntN(3) {
							case 0: // the writer reads too
								r, err := rw.RLock(held)
								if err != nil {
									t.Errorf("writer's rlock %q: %v", name, err)
									return
								}
								pause()
								histRelease(t, h, histHold{name, r, history.Shared, time.Now()}, rw.RUnlock)
							case 1: // downgrade: the write hold ends, a read hold begins
								pause()
								wEnd := time.Now()
								r, err := rw.Downgrade(held)
								if err != nil {
									t.Errorf("downgrade %q: %v", name, err)
									return
								}
								rAt := time.Now()
								histAdd(h, w, wEnd)
								pause()
								histRelease(t, h, histHold{name, r, history.Shared, rAt}, rw.RUnlock)
								downgrades.Add(1)
								writes.Add(1)
								continue
							}
							pause()
							histRelease(t, h, w, rw.Unlock)
							writes.Add(1)
						}
					})
				}
			}
			wg.Wait()
			require.False(t, t.Failed())
			require.Equal(t, int64(len(procs)*perProc*iters), reads.Load()+writes.Load())
			require.Positive(t, writes.Load())
			require.Positive(t, reads.Load())
			require.NoError(t, h.Err())
			require.Empty(t, histLeftovers(t, env.Client, names...))
			t.Logf("%d reads, %d writes (%d downgraded), %d holds recorded", reads.Load(), writes.Load(), downgrades.Load(), h.Len())
		})
	}
}

// histReader takes the read lock, sometimes re-enters it and checks that
// the write lock is refused to a reader, and records the holds.
func histReader(t *testing.T, h *history.History, rw *rwlock.RWMutex, ctx context.Context, rng *rand.Rand, pause func()) bool {
	held, err := rw.RLock(ctx)
	if err != nil {
		t.Errorf("rlock %q: %v", rw.Name(), err)
		return false
	}
	r := histHold{rw.Name(), held, history.Shared, time.Now()}
	switch rng.IntN(4) {
	case 0:
		inner, err := rw.RLock(held)
		if err != nil {
			t.Errorf("re-enter rlock %q: %v", rw.Name(), err)
			return false
		}
		pause()
		histRelease(t, h, histHold{rw.Name(), inner, history.Shared, time.Now()}, rw.RUnlock)
	case 1:
		if _, err := rw.TryLock(held); !errors.Is(err, rwlock.ErrUpgradeNotSupported) {
			t.Errorf("a reader's TryLock of %q: %v, want ErrUpgradeNotSupported", rw.Name(), err)
			return false
		}
	}
	pause()
	histRelease(t, h, r, rw.RUnlock)
	return true
}
