package lock_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/core"
	"github.com/relock-go/relock/internal/testkit/redistest"
	"github.com/relock-go/relock/lock"
)

// TestKeptKeyLivesAsLongAsTheHold: a key asked for with core.KeepWith is
// renewed in the hold's own renewal, with or without a holder label, and
// left to lapse once the hold is released. A nested acquisition of
// another lock does not keep it.
func TestKeptKeyLivesAsLongAsTheHold(t *testing.T) {
	for _, labeled := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "labeled"}[labeled], func(t *testing.T) {
			env := redistest.Backends()[1].New(t) // a redis-server: its TTLs run on their own
			ctx := ctxT(t)
			const lease = 300 * time.Millisecond
			opts := []lock.Option{lock.WithWatchdogTimeout(lease)}
			if labeled {
				opts = append(opts, lock.WithHolderLabel("pod-7"))
			}
			mu := lock.NewFair(env.Client, "kept", opts...)
			other := lock.New(env.Client, "other", lock.WithWatchdogTimeout(lease))
			require.NoError(t, env.Client.Set(ctx, "record:{kept}", "v", lease).Err())
			require.NoError(t, env.Client.Set(ctx, "record:{other}", "v", lease).Err())

			held, err := mu.Lock(core.KeepWith(ctx, "kept", "record:{kept}"))
			require.NoError(t, err)
			nested, err := other.Lock(core.KeepWith(held, "kept", "record:{other}"))
			require.NoError(t, err)
			time.Sleep(3 * lease)
			require.EqualValues(t, 1, env.Client.Exists(ctx, "record:{kept}").Val(), "renewed with the hold")
			ttl := env.Client.PTTL(ctx, "record:{kept}").Val()
			require.Positive(t, ttl)
			require.LessOrEqual(t, ttl, lease)
			require.Zero(t, env.Client.Exists(ctx, "record:{other}").Val(), "another lock's hold keeps nothing")

			require.NoError(t, other.Unlock(nested))
			require.NoError(t, mu.Unlock(held))
			require.Eventually(t, func() bool { return env.Client.Exists(ctx, "record:{kept}").Val() == 0 },
				3*time.Second, 10*time.Millisecond, "no longer renewed once released")
		})
	}
}
