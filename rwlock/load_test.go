package rwlock_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/testkit/redistest"
	"github.com/relock-go/relock/rwlock"
)

// interval is one critical section, as seen from inside it.
type interval struct {
	start, end time.Time
	write      bool
	who        string
}

// writeOverlaps counts the pairs of sections, at least one of them a
// write, that overlapped in time.
func writeOverlaps(h []interval) (n int, first string) {
	for i := range h {
		for j := i + 1; j < len(h); j++ {
			if !h[i].write && !h[j].write {
				continue
			}
			if h[i].start.Before(h[j].end) && h[j].start.Before(h[i].end) {
				if n == 0 {
					first = fmt.Sprintf("%s (write %v) and %s (write %v)", h[i].who, h[i].write, h[j].who, h[j].write)
				}
				n++
			}
		}
	}
	return n, first
}

// occupancy counts who is inside and flags any writer that is not alone.
type occupancy struct {
	readers, writers atomic.Int32
	maxReaders       atomic.Int32
	overlaps         atomic.Int32
}

func (o *occupancy) enterRead() {
	n := o.readers.Add(1)
	if o.writers.Load() != 0 {
		o.overlaps.Add(1)
	}
	for {
		m := o.maxReaders.Load()
		if n <= m || o.maxReaders.CompareAndSwap(m, n) {
			return
		}
	}
}

func (o *occupancy) exitRead() { o.readers.Add(-1) }

func (o *occupancy) enterWrite() {
	if o.writers.Add(1) != 1 || o.readers.Load() != 0 {
		o.overlaps.Add(1)
	}
}

func (o *occupancy) exitWrite() { o.writers.Add(-1) }

// TestLoadNoOverlap: 5 goroutines on each of 2 handles on 2 clients (like
// 2 processes) mix reads (3 in 4, sometimes re-entered) and writes
// (sometimes re-entered, sometimes reading too, sometimes downgraded) for
// a bounded number of iterations. Every section is recorded; a writer
// with anyone else inside fails the test, and readers must have shared
// the lock at times.
func TestLoadNoOverlap(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		clients := []redis.UniversalClient{env.Universal, otherClient(t, env)}
		const (
			perHandle = 5
			iters     = 30
		)
		var (
			occ     occupancy
			mu      sync.Mutex
			history []interval
			wg      sync.WaitGroup
			reads   atomic.Int32
			writes  atomic.Int32
		)
		record := func(start time.Time, write bool, who string) {
			end := time.Now()
			mu.Lock()
			history = append(history, interval{start, end, write, who})
			mu.Unlock()
		}
		for h, c := range clients {
			rw := rwlock.New(c, "load")
			for g := range perHandle {
				wg.Add(1)
				go func() {
					defer wg.Done()
					who := fmt.Sprintf("%d/%d", h, g)
					rng := rand.New(rand.NewPCG(uint64(h), uint64(g)))
					for i := range iters {
						if rng.IntN(4) == 0 {
							if err := writeSection(ctx, rw, &occ, rng, record, who); err != nil {
								t.Errorf("%s write %d: %v", who, i, err)
								return
							}
							writes.Add(1)
							continue
						}
						r, err := rw.RLock(ctx)
						if err != nil {
							t.Errorf("%s rlock %d: %v", who, i, err)
							return
						}
						start := time.Now()
						occ.enterRead()
						if rng.IntN(4) == 0 {
							inner, err := rw.RLock(r) // re-entry, even past waiting writers
							if err != nil {
								t.Errorf("%s re-enter: %v", who, err)
							} else if err := rw.RUnlock(inner); err != nil {
								t.Errorf("%s inner runlock: %v", who, err)
							}
						}
						time.Sleep(time.Duration(500+rng.IntN(1000)) * time.Microsecond)
						occ.exitRead()
						record(start, false, who)
						if err := rw.RUnlock(r); err != nil {
							t.Errorf("%s runlock %d: %v", who, i, err)
							return
						}
						reads.Add(1)
					}
				}()
			}
		}
		wg.Wait()
		t.Logf("%d reads, %d writes, at most %d readers inside at once", reads.Load(), writes.Load(), occ.maxReaders.Load())
		require.Zero(t, occ.overlaps.Load(), "a writer was inside with someone else")
		n, first := writeOverlaps(history)
		require.Zero(t, n, "overlapping sections, first: %s", first)
		require.EqualValues(t, len(clients)*perHandle*iters, reads.Load()+writes.Load())
		require.Positive(t, writes.Load())
		require.GreaterOrEqual(t, occ.maxReaders.Load(), int32(2), "readers never shared the lock")
		onlyBookkeepingLeft(t, env.Universal, "load")
	})
}

func writeSection(ctx context.Context, rw *rwlock.RWMutex, occ *occupancy, rng *rand.Rand,
	record func(time.Time, bool, string), who string) error {
	w, err := rw.Lock(ctx)
	if err != nil {
		return err
	}
	start := time.Now()
	occ.enterWrite()
	switch rng.IntN(3) {
	case 0: // re-enter the write lock
		inner, err := rw.Lock(w)
		if err != nil {
			return fmt.Errorf("re-enter: %w", err)
		}
		if err := rw.Unlock(inner); err != nil {
			return fmt.Errorf("inner unlock: %w", err)
		}
	case 1: // the writer reads too
		r, err := rw.RLock(w)
		if err != nil {
			return fmt.Errorf("writer's rlock: %w", err)
		}
		if err := rw.RUnlock(r); err != nil {
			return fmt.Errorf("writer's runlock: %w", err)
		}
	}
	time.Sleep(200 * time.Microsecond)
	occ.exitWrite()
	record(start, true, who)
	if rng.IntN(3) != 0 {
		return rw.Unlock(w)
	}
	d, err := rw.Downgrade(w)
	if err != nil {
		return fmt.Errorf("downgrade: %w", err)
	}
	start = time.Now()
	occ.enterRead()
	time.Sleep(200 * time.Microsecond)
	occ.exitRead()
	record(start, false, who+" downgraded")
	return rw.RUnlock(d)
}

// TestWriterNotStarvedByReaders: six readers come and go continuously,
// each hand over hand (it takes its next read hold before it lets go of
// the current one), so the lock never falls free by itself: without the
// waiting writer's mark a writer would wait forever. The writer must still
// get in, each of three times, within a generous bound: its mark makes
// new readers (a TryRLock, then a waiting RLock) step back.
func TestWriterNotStarvedByReaders(t *testing.T) {
	for _, layout := range []string{"same client", "other processes"} {
		t.Run(layout, func(t *testing.T) {
			each(t, func(t *testing.T, env *redistest.Env) {
				ctx := ctxT(t)
				const (
					readers = 6
					hold    = 2 * time.Millisecond
					bound   = 3 * time.Second
				)
				readerClients := []redis.UniversalClient{env.Universal}
				writerClient := env.Universal
				if layout == "other processes" {
					readerClients = []redis.UniversalClient{otherClient(t, env), otherClient(t, env)}
					writerClient = otherClient(t, env)
				}
				var (
					occ     occupancy
					reads   atomic.Int64
					stepped atomic.Int64 // readers held back by a waiting writer
					stop    = make(chan struct{})
					wg      sync.WaitGroup
				)
				for g := range readers {
					rw := rwlock.New(readerClients[g%len(readerClients)], "starve")
					wg.Add(1)
					go func() {
						defer wg.Done()
						time.Sleep(time.Duration(g) * hold / readers) // staggered
						cur, err := rw.RLock(ctx)
						if err != nil {
							t.Errorf("reader %d: %v", g, err)
							return
						}
						occ.enterRead()
						for {
							time.Sleep(hold)
							select {
							case <-stop:
								occ.exitRead()
								if err := rw.RUnlock(cur); err != nil {
									t.Errorf("reader %d runlock: %v", g, err)
								}
								return
							default:
							}
							// Arrive before leaving.
							next, err := rw.TryRLock(ctx)
							if err == nil {
								occ.enterRead()
							}
							occ.exitRead()
							reads.Add(1)
							if uerr := rw.RUnlock(cur); uerr != nil {
								t.Errorf("reader %d runlock: %v", g, uerr)
								return
							}
							if err != nil { // a writer waits: queue behind it
								if !errors.Is(err, rwlock.ErrNotAcquired) {
									t.Errorf("reader %d tryrlock: %v", g, err)
									return
								}
								stepped.Add(1)
								if next, err = rw.RLock(ctx); err != nil {
									t.Errorf("reader %d: %v", g, err)
									return
								}
								occ.enterRead()
							}
							cur = next
						}
					}()
				}
				defer func() {
					close(stop)
					wg.Wait()
				}()

				// Readers are in full flow and the lock is never free.
				require.Eventually(t, func() bool { return reads.Load() >= 3*readers }, settle, poll)
				for range 100 {
					require.True(t, exists(t, env.Universal, "starve"), "the lock fell free without a writer")
					require.Positive(t, occ.readers.Load())
					time.Sleep(time.Millisecond)
				}

				writer := rwlock.New(writerClient, "starve", rwlock.WithWaitTimeout(bound))
				for k := range 3 {
					before := reads.Load()
					start := time.Now()
					w, err := writer.Lock(ctx)
					took := time.Since(start)
					require.NoError(t, err, "writer %d starved for %v", k, took)
					occ.enterWrite()
					time.Sleep(time.Millisecond)
					occ.exitWrite()
					require.NoError(t, writer.Unlock(w))
					t.Logf("writer %d got in after %v (%d reads ended meanwhile)", k, took, reads.Load()-before)
					// Let the readers flow again before the next write.
					after := reads.Load()
					require.Eventually(t, func() bool { return reads.Load() >= after+2*readers }, settle, poll)
				}
				require.Zero(t, occ.overlaps.Load(), "a writer was inside with readers")
				require.Positive(t, stepped.Load(), "readers were held back by the waiting writer")
			})
		})
	}
}
