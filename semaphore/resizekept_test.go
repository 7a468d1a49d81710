package semaphore_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/testkit/redistest"
	"github.com/relock-go/relock/semaphore"
)

// TestResizeRecordOutlivesUse: a size set by Resize is kept an hour,
// whatever acquisitions come and go meanwhile: a Semaphore built later
// with another size still finds it (ErrSizeMismatch), not a fresh record.
func TestResizeRecordOutlivesUse(t *testing.T) {
	each(t, func(t *testing.T, env *env) {
		ctx := ctxT(t)
		const name = "resize-kept"
		s := semaphore.New(env.Universal, name, 2)
		require.NoError(t, s.Resize(ctx, 3))
		h, err := s.Acquire(ctx, 1)
		require.NoError(t, err)
		require.NoError(t, s.Release(h))
		size, err := env.Universal.HGet(ctx, name, "size").Int64()
		require.NoError(t, err, "the record is still there after the semaphore went idle")
		require.EqualValues(t, 3, size)
		ttl, err := env.Universal.PTTL(ctx, name).Result()
		require.NoError(t, err)
		require.Greater(t, ttl, 50*time.Minute, "kept an hour from the Resize")
		_, err = semaphore.New(env.Universal, name, 2).TryAcquire(ctx, 1)
		require.ErrorIs(t, err, semaphore.ErrSizeMismatch)
	})
}

// TestAcquireDoesNotWaitOutAStalledResize: a try under a deadline waits
// for a Resize in flight (which holds the size while its script runs) no
// longer than that deadline, on a server that holds the Resize up.
func TestAcquireDoesNotWaitOutAStalledResize(t *testing.T) {
	srv := redistest.StartServer(t)
	rdb := srv.Client(t)
	ctx := context.Background()
	s := semaphore.New(rdb, "resize-stalled", 2)
	h, err := s.Acquire(ctx, 1)
	require.NoError(t, err)
	require.NoError(t, s.Release(h))

	require.NoError(t, rdb.Do(ctx, "client", "pause", 1500, "all").Err())
	resized := make(chan error, 1)
	go func() { resized <- s.Resize(ctx, 3) }()
	time.Sleep(100 * time.Millisecond) // the Resize's script is on its way
	dctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = s.Acquire(dctx, 1)
	took := time.Since(start)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Less(t, took, 700*time.Millisecond, "the Acquire waited out the Resize")
	require.NoError(t, <-resized)
	require.Eventually(t, func() bool { n, err := s.Available(ctx); return err == nil && n == 3 },
		5*time.Second, 10*time.Millisecond, "the resize took effect, and the try took nothing")
}
