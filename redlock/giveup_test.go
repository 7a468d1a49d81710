package redlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/relock-go/relock/redlock"
)

// A Redlock whose wait ends while a quorum of its masters is unreachable
// returns by the end of its wait: the give-back of a failed round (bounded
// by the node timeout, 3 s for the default 30 s lease) is not waited for
// past it, but finishes on the workers, and their goroutines end soon
// after.
func TestWaitEndingWithMastersDownReturnsInTime(t *testing.T) {
	for _, tc := range []struct {
		name string
		// lock runs Lock with a wait that ends after wait, by ctx or by
		// WithWaitTimeout.
		lock func(members []redlock.Member, wait time.Duration) error
		want error
	}{
		{"ctx deadline", func(members []redlock.Member, wait time.Duration) error {
			ctx, cancel := context.WithTimeout(context.Background(), wait)
			defer cancel()
			_, err := redlock.New(members).Lock(ctx)
			return err
		}, context.DeadlineExceeded},
		{"wait timeout", func(members []redlock.Member, wait time.Duration) error {
			_, err := redlock.New(members, redlock.WithWaitTimeout(wait)).Lock(context.Background())
			return err
		}, redlock.ErrNotAcquired},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Registered first, so checked last: after the clients closed.
			ignore := goleak.IgnoreCurrent()
			t.Cleanup(func() {
				deadline := time.Now().Add(10 * time.Second)
				for err := goleak.Find(ignore); err != nil; err = goleak.Find(ignore) {
					if time.Now().After(deadline) {
						t.Errorf("goroutines outlived the give-back: %v", err)
						return
					}
					time.Sleep(50 * time.Millisecond)
				}
			})
			ms := startMasters(t, 3)
			name := "giveup-" + tc.name
			members := mutexes(ms.process(t), name)
			// Two of three masters are gone: no round reaches the quorum,
			// and the give-back retries on them for the node timeout.
			ms.srvs[1].Vanish(t)
			ms.srvs[2].Vanish(t)

			const wait = 1500 * time.Millisecond
			deadline := time.Now().Add(wait)
			err := tc.lock(members, wait)
			late := time.Since(deadline)
			t.Logf("Lock returned %v after the end of its wait: %v", late.Round(time.Millisecond), err)
			require.Error(t, err)
			require.True(t, errors.Is(err, tc.want), "want %v: %v", tc.want, err)
			require.Less(t, late, time.Second, "Lock returned %v after the end of its wait", late)
			// The member that answered was given back all the same.
			require.Eventually(t, func() bool { return ms.exists(t, 0, name) == 0 }, 5*time.Second, 10*time.Millisecond,
				"the live member is given back")
		})
	}
}
