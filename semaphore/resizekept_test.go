package semaphore_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

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
