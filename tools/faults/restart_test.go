//go:build faults

package faults

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

// TestFaultRedisRestartMidHold kills redis-server (every master of the
// Redlock) with SIGKILL while two holders hold and two waiters wait on each
// of their locks, and starts it again without persistence: it comes back
// empty. Every holder must be told (ErrLockLost); every waiter must recover
// and acquire once Redis is back. (Two owners may then hold at once, the
// holder until it is told: a restart without persistence forgets the
// holds, as the redlock package documents; so no overlap is asserted.)
func TestFaultRedisRestartMidHold(t *testing.T) {
	for _, p := range prims {
		t.Run(p.name, func(t *testing.T) {
			checkLeaks(t)
			e := newEnv(t, p.masters, false)
			opt := faultLease
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			var wg sync.WaitGroup
			defer wg.Wait()

			// Waiters on their own clients: another process's, which must
			// rebuild its pub/sub connection.
			wcs := e.clients(t)
			type held struct {
				name string
				ctx  context.Context
				l    locker
				end  *endWatch
			}
			var holds []held
			var waits []<-chan result
			var waitNames []string
			for i := range 2 {
				name := fmt.Sprintf("%s:%d", lockName(t), i)
				l := p.a(e.direct, name, opt)
				h, err := l.Lock(ctx)
				if err != nil {
					t.Fatalf("holder %d: %v", i, err)
				}
				holds = append(holds, held{name, h, l, watchEnd(h)})
				w := p.b(wcs, name, opt)
				for range 2 {
					waits = append(waits, goLockThenUnlock(ctx, w, &wg))
					waitNames = append(waitNames, name)
				}
			}
			if p.masters == 1 {
				waitSubscribed(t, e.direct)
			}
			time.Sleep(200 * time.Millisecond) // every waiter has tried and waits

			killed := time.Now()
			for _, s := range e.servers {
				s.Kill()
			}
			time.Sleep(300 * time.Millisecond)
			for _, s := range e.servers {
				s.Restart(t)
			}
			back := time.Now()
			t.Logf("Redis down for %v", back.Sub(killed).Round(time.Millisecond))

			for i, h := range holds {
				told := h.end.told(t, fmt.Sprintf("holder %d", i), faultLease+5*time.Second)
				t.Logf("holder %d told %v after the kill", i, told.Sub(killed).Round(time.Millisecond))
			}
			for i, ch := range waits {
				r := await(t, fmt.Sprintf("waiter %d", i), ch, 10*time.Second)
				if r.err != nil {
					t.Errorf("waiter %d of %s: %v", i, waitNames[i], r.err)
					continue
				}
				t.Logf("waiter %d acquired %v after Redis was back", i, r.at.Sub(back).Round(time.Millisecond))
			}
			for i, h := range holds {
				if err := h.l.Unlock(h.ctx); !isLost(err) {
					t.Errorf("holder %d's Unlock after the restart: %v, want ErrLockLost", i, err)
				}
			}
		})
	}
}

// goLockThenUnlock is goLock for waiters that let go soon after they
// acquire, so that the next waiter of the lock gets its turn. The result
// carries no hold then; its err is the first error of Lock or Unlock.
func goLockThenUnlock(ctx context.Context, l locker, wg *sync.WaitGroup) <-chan result {
	ch := make(chan result, 1)
	wg.Add(1)
	go func() {
		defer wg.Done()
		held, err := l.Lock(ctx)
		r := result{err: err, at: time.Now()}
		if err == nil {
			time.Sleep(10 * time.Millisecond)
			if uerr := l.Unlock(held); uerr != nil {
				r.err = fmt.Errorf("unlock: %w", uerr)
			}
		}
		ch <- r
	}()
	return ch
}
