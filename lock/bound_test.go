package lock_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock"
	"github.com/relock-go/relock/internal/testkit/redistest"
	"github.com/relock-go/relock/lock"
)

// boundSlack is how late past its bound a call may return: scheduling on
// a loaded machine, not a network wait.
const boundSlack = 100 * time.Millisecond

// clientSettings are the two ways a user's go-redis client may treat a
// context's deadline: ignored (the default) or applied to the connection.
var clientSettings = []struct {
	name string
	opt  func(*redis.Options)
}{
	{"default", func(*redis.Options) {}},
	{"ContextTimeoutEnabled", func(o *redis.Options) { o.ContextTimeoutEnabled = true }},
}

// within runs call and checks that it returned within bound + boundSlack,
// with an error that names op and the lock when it failed.
func within(t *testing.T, bound time.Duration, op, name string, call func() error) error {
	t.Helper()
	start := time.Now()
	err := call()
	took := time.Since(start)
	assert.LessOrEqual(t, took, bound+boundSlack, "%s took %v, bound %v (err %v)", op, took, bound, err)
	if err != nil {
		var rerr *relock.Error
		if assert.ErrorAs(t, err, &rerr, "%s: %v", op, err) {
			assert.Equal(t, op, rerr.Op)
			assert.Equal(t, name, rerr.Name)
		}
	}
	t.Logf("%s: %v (%v)", op, took.Round(time.Millisecond), err)
	return err
}

func TestCallsReturnWithinTheirBoundOnAStalledServer(t *testing.T) {
	for _, cs := range clientSettings {
		t.Run(cs.name, func(t *testing.T) {
			t.Parallel()
			srv := redistest.StartServer(t)
			rdb := srv.Client(t, cs.opt)
			const unlockTimeout = 500 * time.Millisecond
			name := "bound:" + cs.name
			mu := lock.New(rdb, name, lock.WithUnlockTimeout(unlockTimeout))
			ctx := context.Background()
			held, err := mu.Lock(ctx)
			require.NoError(t, err)
			other := lock.New(rdb, name+":free", lock.WithUnlockTimeout(unlockTimeout))

			srv.Pause(t)
			short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
			defer cancel()
			err = within(t, 300*time.Millisecond, "lock", name+":free", func() error { _, err := other.Lock(short); return err })
			assert.ErrorIs(t, err, context.DeadlineExceeded)
			assert.ErrorIs(t, err, lock.ErrNotAcquired)
			short2, cancel2 := context.WithTimeout(ctx, 300*time.Millisecond)
			defer cancel2()
			within(t, 300*time.Millisecond, "trylock", name+":free", func() error { _, err := other.TryLock(short2); return err })
			within(t, unlockTimeout, "holdcount", name, func() error { _, err := mu.HoldCount(held); return err })
			within(t, unlockTimeout, "islocked", name, func() error { _, err := mu.IsLocked(ctx); return err })
			within(t, unlockTimeout, "ttl", name, func() error { _, err := mu.TTL(ctx); return err })
			within(t, unlockTimeout, "forceunlock", name+":free", func() error { _, err := other.ForceUnlock(ctx); return err })
			err = within(t, unlockTimeout, "unlock", name, func() error { return mu.Unlock(held) })
			require.Error(t, err)
			srv.Resume()

			// The release went on in the background: the lock comes free
			// within the unlock timeout, not at the end of its lease.
			require.Eventually(t, func() bool {
				n, err := rdb.Exists(ctx, name).Result()
				return err == nil && n == 0
			}, unlockTimeout+time.Second, 10*time.Millisecond, "the lock is still held after the release's background retries")
			// The try that the Lock above stopped waiting for is given back.
			require.Eventually(t, func() bool {
				n, err := rdb.Exists(ctx, name+":free").Result()
				return err == nil && n == 0
			}, 5*time.Second, 10*time.Millisecond, "the late try's grant was not given back")
		})
	}
}

func TestUnlockRetriesABusyServer(t *testing.T) {
	srv := redistest.StartServer(t, redistest.WithArgs("--busy-reply-threshold", "50"))
	rdb := srv.Client(t)
	ctx := context.Background()
	mu := lock.New(rdb, "bound:busy", lock.WithUnlockTimeout(2*time.Second))
	held, err := mu.Lock(ctx)
	require.NoError(t, err)
	busyClient := srv.Client(t, func(o *redis.Options) { o.ReadTimeout = 5 * time.Second })
	wait := redistest.BusyScript(busyClient, 600*time.Millisecond)
	defer wait()
	redistest.RequireBusy(t, ctx, rdb)
	start := time.Now()
	require.NoError(t, mu.Unlock(held), "an unlock during a busy script must be sent again until it runs")
	t.Logf("unlock during a busy script took %v", time.Since(start))
	n, err := rdb.Exists(ctx, "bound:busy").Result()
	require.NoError(t, err)
	assert.Zero(t, n, "the lock is still held after Unlock returned nil")

	wait()
	held, err = mu.Lock(ctx)
	require.NoError(t, err)
	wait2 := redistest.BusyScript(busyClient, 600*time.Millisecond)
	defer wait2()
	redistest.RequireBusy(t, ctx, rdb)
	other := lock.New(rdb, "bound:busy:other")
	oheld, err := other.TryLock(ctx)
	require.NoError(t, err, "a TryLock during a busy script must be sent again until it runs")
	require.NoError(t, other.Unlock(oheld))
	require.NoError(t, mu.Unlock(held))
}

// Unlocks sent together (more than a client sends at once, so some wait
// for a pipeline of others) each return within their own bound when the
// server stalls, whatever the client's read timeout.
func TestUnlocksInFlightTogetherReturnWithinTheirBound(t *testing.T) {
	for _, cs := range clientSettings {
		t.Run(cs.name, func(t *testing.T) {
			t.Parallel()
			srv := redistest.StartServer(t)
			rdb := srv.Client(t, cs.opt, func(o *redis.Options) { o.ReadTimeout = 3 * time.Second; o.PoolSize = 64 })
			const n, unlockTimeout = 24, 500 * time.Millisecond
			ctx := context.Background()
			mus := make([]*lock.Mutex, n)
			helds := make([]context.Context, n)
			for i := range mus {
				mus[i] = lock.New(rdb, fmt.Sprintf("bound:together:%s:%d", cs.name, i), lock.WithUnlockTimeout(unlockTimeout))
				held, err := mus[i].Lock(ctx)
				require.NoError(t, err)
				helds[i] = held
			}
			srv.Pause(t)
			var wg sync.WaitGroup
			for i := range mus {
				wg.Go(func() {
					err := within(t, unlockTimeout, "unlock", mus[i].Name(), func() error { return mus[i].Unlock(helds[i]) })
					assert.Error(t, err, "an unlock on a stalled server returned nil")
				})
			}
			wg.Wait()
		})
	}
}

// A holder label is written after the acquisition: a server that stalls
// then must not hold Lock past its caller's deadline.
func TestLabelWriteOnAStalledServerKeepsTheCallersDeadline(t *testing.T) {
	for _, cs := range clientSettings {
		t.Run(cs.name, func(t *testing.T) {
			t.Parallel()
			srv := redistest.StartServer(t)
			faults := redistest.NewScriptFaults()
			rdb := srv.Client(t, cs.opt, func(o *redis.Options) { o.ReadTimeout = 3 * time.Second })
			rdb.AddHook(faults)
			name := "bound:label:" + cs.name
			mu := lock.New(rdb, name, lock.WithHolderLabel("pod-7"), lock.WithUnlockTimeout(500*time.Millisecond))
			warm, err := mu.Lock(context.Background()) // the scripts loaded: the next one is the acquire
			require.NoError(t, err)
			require.NoError(t, mu.Unlock(warm))
			faults.AfterNext(func() { srv.Pause(t) }) // after the acquire script ran
			ctx, cancel := context.WithTimeout(context.Background(), 400*time.Millisecond)
			defer cancel()
			var held context.Context
			within(t, 400*time.Millisecond, "lock", name, func() (err error) { held, err = mu.Lock(ctx); return err })
			if held != nil {
				within(t, 500*time.Millisecond, "unlock", name, func() error { return mu.Unlock(held) })
			}
		})
	}
}
