package semaphore_test

import (
	"context"
	"math/rand/v2"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/testkit/redistest"
	"github.com/relock-go/relock/semaphore"
)

// TestGiveUpChurnLeavesNoMark: a burst of waiters of another process
// gives up after 1 to 5 ms each while the only permit is held, most of
// them in the middle of a try. Once the holder releases, the next Acquire
// of that process must get the free permit at once: not behind a mark one
// of them left (it lives up to 3 s), nor behind tries sent for waiters
// already gone, nor behind a give-back each. It times rounds, as a
// benchmark does, so it runs on demand: RELOCK_CHURN=1.
func TestGiveUpChurnLeavesNoMark(t *testing.T) {
	if os.Getenv("RELOCK_CHURN") == "" {
		t.Skip("a timed churn of 8 rounds; run with RELOCK_CHURN=1")
	}
	for _, b := range redistest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			env := b.New(t)
			calls, workers := 2000, 2000
			if env.Mini != nil {
				// one process serves both sides here, each command under one lock
				calls, workers = 200, 16
			}
			churnRounds(t, env, calls, workers)
		})
	}
}

func churnRounds(t *testing.T, env *redistest.Env, calls, workers int) {
	const name, rounds = "churn", 8
	ctx := context.Background()
	a := semaphore.New(env.Universal, name, 1)
	b := semaphore.New(env.NewClient(t), name, 1)
	got, err := b.Acquire(ctx, 1) // its connections and subscription made
	require.NoError(t, err)
	require.NoError(t, b.Release(got))
	var slow int
	for round := range rounds {
		held, err := a.Acquire(ctx, 1)
		require.NoError(t, err)
		churn(b, calls, workers)
		require.NoError(t, a.Release(held))
		actx, cancel := context.WithTimeout(ctx, 10*time.Second)
		start := time.Now()
		got, err := b.Acquire(actx, 1)
		took := time.Since(start)
		cancel()
		require.NoError(t, err, "round %d", round)
		require.NoError(t, b.Release(got))
		t.Logf("round %d: next Acquire in %v", round, took.Round(100*time.Microsecond))
		if took > 50*time.Millisecond {
			slow++
		}
	}
	require.Zero(t, slow, "rounds whose next Acquire took over 50ms, of %d", rounds)
}

// churn makes calls Acquires of s on workers goroutines, each giving up
// after 1 to 5 ms.
func churn(s *semaphore.Semaphore, calls, workers int) {
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < calls; i += workers {
				d := time.Millisecond + rand.N(4*time.Millisecond)
				ctx, cancel := context.WithTimeout(context.Background(), d)
				if got, err := s.Acquire(ctx, 1); err == nil {
					_ = s.Release(got)
				}
				cancel()
			}
		})
	}
	wg.Wait()
}
