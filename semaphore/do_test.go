package semaphore_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/semaphore"
)

// Do gives its permits back on every path, a panic included.
func TestDoReleasesPermits(t *testing.T) {
	each(t, func(t *testing.T, env *env) {
		ctx := ctxT(t)
		s := semaphore.New(env.Universal, "do", 3)
		errWork := errors.New("work failed")
		err := s.Do(ctx, 2, func(held context.Context) error {
			require.EqualValues(t, 1, available(t, s))
			return errWork
		})
		require.ErrorIs(t, err, errWork)
		require.EqualValues(t, 3, available(t, s))
		require.Panics(t, func() {
			_ = s.Do(ctx, 3, func(context.Context) error { panic("boom") })
		})
		require.EqualValues(t, 3, available(t, s))
		err = s.Do(ctx, 4, func(context.Context) error { return nil })
		require.ErrorIs(t, err, semaphore.ErrInvalidArgument, "more than the size")
	})
}
