package semaphore_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/redistest"
	"github.com/relock-go/relock/semaphore"
)

func TestSmoke(t *testing.T) {
	for _, b := range redistest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			env := b.New(t)
			ctx := context.Background()
			s := semaphore.New(env.Client, "pool", 4)
			a, err := s.Acquire(ctx, 3)
			require.NoError(t, err)
			av, err := s.Available(ctx)
			require.NoError(t, err)
			require.EqualValues(t, 1, av)
			_, err = s.TryAcquire(ctx, 2)
			require.ErrorIs(t, err, semaphore.ErrNotAcquired)
			_, err = s.Acquire(ctx, 5)
			require.ErrorIs(t, err, semaphore.ErrInvalidArgument)
			_, err = semaphore.New(env.Client, "pool", 5).Available(ctx)
			require.ErrorIs(t, err, semaphore.ErrSizeMismatch)
			t.Log(err)
			require.NoError(t, s.Release(a))
			require.ErrorIs(t, s.Release(a), semaphore.ErrNotHeld)

			var inside, maxInside atomic.Int32
			var wg sync.WaitGroup
			for range 10 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range 10 {
						h, err := s.Acquire(ctx, 1)
						if err != nil {
							t.Error(err)
							return
						}
						v := inside.Add(1)
						for {
							m := maxInside.Load()
							if v <= m || maxInside.CompareAndSwap(m, v) {
								break
							}
						}
						time.Sleep(2 * time.Millisecond)
						inside.Add(-1)
						require.NoError(t, s.Release(h))
					}
				}()
			}
			wg.Wait()
			t.Log("max inside", maxInside.Load())
			require.LessOrEqual(t, maxInside.Load(), int32(4))
			av, _ = s.Available(ctx)
			require.EqualValues(t, 4, av)
		})
	}
}
