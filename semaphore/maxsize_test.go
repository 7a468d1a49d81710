package semaphore_test

import (
	"context"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/testkit/redistest"
	"github.com/relock-go/relock/semaphore"
)

// Lua numbers are doubles: a size above 2^53 would be stored wrongly
// (2^53+1 as 2^53, math.MaxInt64 as "9.22e+18", and Available would go
// negative), so it is refused as bad input, writing nothing; 2^53 itself
// is exact.
func TestSizeAbove2To53IsInvalid(t *testing.T) {
	for _, b := range redistest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			env := b.New(t)
			ctx := ctxT(t)
			c := env.U()
			for _, size := range []int64{semaphore.MaxSize + 1, semaphore.MaxSize + 2, math.MaxInt64 / 2, math.MaxInt64} {
				s := semaphore.New(c, "big", size)
				for _, n := range []int64{1, size} {
					_, err := s.Acquire(ctx, n)
					require.ErrorIs(t, err, semaphore.ErrInvalidArgument, "size %d, Acquire(%d)", size, n)
					require.ErrorContains(t, err, "2^53")
					_, err = s.TryAcquire(ctx, n)
					require.ErrorIs(t, err, semaphore.ErrInvalidArgument, "size %d, TryAcquire(%d)", size, n)
				}
				_, err := s.Available(ctx)
				require.ErrorIs(t, err, semaphore.ErrInvalidArgument)
				require.ErrorIs(t, s.Release(ctx), semaphore.ErrInvalidArgument)
				keys, err := redistest.Keys(ctx, c, "*")
				require.NoError(t, err)
				require.Empty(t, keys, "size %d: nothing may be written on invalid input", size)
			}

			s := semaphore.New(c, "exact", semaphore.MaxSize)
			held, err := s.Acquire(ctx, semaphore.MaxSize-1)
			require.NoError(t, err)
			avail, err := s.Available(ctx)
			require.NoError(t, err)
			require.EqualValues(t, 1, avail)
			err = s.Resize(ctx, semaphore.MaxSize+1)
			require.ErrorIs(t, err, semaphore.ErrInvalidArgument)
			require.Equal(t, int64(semaphore.MaxSize), s.Size(), "a refused Resize changes nothing")
			require.NoError(t, s.Release(held))
			avail, err = s.Available(ctx)
			require.NoError(t, err)
			require.EqualValues(t, semaphore.MaxSize, avail)
		})
	}
}

// Permit counts are bounded by the size, so no count above 2^53 reaches
// a script either.
func TestPermitCountAboveSizeIsInvalid(t *testing.T) {
	_, c := redistest.Miniredis(t)
	s := semaphore.New(c, "n", 4)
	for _, n := range []int64{5, semaphore.MaxSize + 1, math.MaxInt64} {
		_, err := s.Acquire(context.Background(), n)
		require.ErrorIs(t, err, semaphore.ErrInvalidArgument, "n %d", n)
		_, err = s.TryAcquire(context.Background(), n)
		require.ErrorIs(t, err, semaphore.ErrInvalidArgument, "n %d", n)
	}
}

// At the largest size the scripts still count exactly: with 2^53-1 of
// 2^53 permits in use, a request for 2 must not fit (2^53+1 would round
// to 2^53 as a double).
func TestLargestSizeCountsExactly(t *testing.T) {
	each(t, func(t *testing.T, env *env) {
		ctx := ctxT(t)
		s := semaphore.New(env.Universal, "largest", semaphore.MaxSize)
		big, err := s.Acquire(ctx, semaphore.MaxSize-1)
		require.NoError(t, err)
		_, err = s.TryAcquire(ctx, 2)
		require.ErrorIs(t, err, semaphore.ErrNotAcquired)
		one, err := s.TryAcquire(ctx, 1)
		require.NoError(t, err)
		require.EqualValues(t, 0, available(t, s))
		require.NoError(t, s.Release(one))
		require.NoError(t, s.Release(big))
		require.EqualValues(t, semaphore.MaxSize, available(t, s))
	})
}
