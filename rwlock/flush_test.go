package rwlock_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/testkit/redistest"
	"github.com/relock-go/relock/rwlock"
)

// TestWaitersWakeWhenTheWriterFindsItsKeyGone: the hash of a held write
// lock is flushed (no unlock message). Once the writer's process learns it
// at its renewal, a waiting writer in its process and a waiting reader in
// another get in within 1 s, not after the TTL they last saw.
func TestWaitersWakeWhenTheWriterFindsItsKeyGone(t *testing.T) {
	srv := redistest.StartServer(t)
	holderClient, otherClient, admin := srv.Client(t), srv.Client(t), srv.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const name, lease = "flushed-rw", 9 * time.Second // renewed every 3 s
	held, err := rwlock.New(holderClient, name, rwlock.WithWatchdogTimeout(lease)).Lock(ctx)
	require.NoError(t, err)

	got := make(chan time.Time, 2)
	var wg sync.WaitGroup
	wait := func(who string, take func() (func() error, error)) {
		wg.Go(func() {
			release, err := take()
			if err != nil {
				t.Errorf("%s: %v", who, err)
				return
			}
			got <- time.Now()
			require.NoError(t, release())
		})
	}
	local := rwlock.New(holderClient, name, rwlock.WithWatchdogTimeout(lease))
	wait("a writer in the holder's process", func() (func() error, error) {
		h, err := local.Lock(ctx)
		return func() error { return local.Unlock(h) }, err
	})
	remote := rwlock.New(otherClient, name, rwlock.WithWatchdogTimeout(lease))
	wait("a reader in another process", func() (func() error, error) {
		h, err := remote.RLock(ctx)
		return func() error { return remote.RUnlock(h) }, err
	})
	channel := "redisson_rwlock:{" + name + "}"
	require.Eventually(t, func() bool {
		n, err := admin.PubSubNumSub(ctx, channel).Result()
		return err == nil && n[channel] == 2
	}, 5*time.Second, 10*time.Millisecond)
	time.Sleep(100 * time.Millisecond)
	require.NoError(t, admin.FlushAll(ctx).Err())
	select {
	case <-held.Done():
	case <-time.After(lease):
		t.Fatal("the writer did not learn that its key is gone")
	}
	learnt := time.Now()
	for range 2 {
		select {
		case at := <-got:
			t.Logf("a waiter got in %v after the writer learnt", at.Sub(learnt))
			require.LessOrEqual(t, at.Sub(learnt), time.Second)
		case <-time.After(lease):
			t.Fatal("a waiter slept on")
		}
	}
	wg.Wait()
}
