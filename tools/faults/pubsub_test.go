//go:build faults

package faults

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestFaultPubSubKilled kills the pub/sub connections (CLIENT KILL TYPE
// pubsub) while goroutines of one client wait for a lock that another
// client holds with a 30 s lease. After the unlock the waiters must still
// acquire promptly, woken by an unlock message on the connection they
// subscribed again on (or the reconnect itself), not by the 30 s TTL:
// unlocked at once after the kill (the message may come while they are
// reconnecting), and after the resubscription.
func TestFaultPubSubKilled(t *testing.T) {
	const prompt = 3 * time.Second // far below the 30 s lease
	for _, p := range prims {
		for _, mode := range []string{"unlock-at-once", "unlock-after-resubscribe"} {
			t.Run(p.name+"/"+mode, func(t *testing.T) {
				checkLeaks(t)
				e := newEnv(t, p.masters, false)
				name := lockName(t)
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				holder := p.b(e.clients(t), name) // the default 30 s lease
				held, err := holder.Lock(ctx)
				if err != nil {
					t.Fatalf("holder: %v", err)
				}
				var wg sync.WaitGroup
				defer wg.Wait()
				wcs := e.clients(t)
				waiter := p.a(wcs, name)
				var waits []<-chan result
				for range 3 {
					waits = append(waits, goLockThenUnlock(ctx, waiter, &wg))
				}
				// The Redlock polls its members and subscribes to nothing;
				// the others wait on one pub/sub connection per client.
				pubsub := p.masters == 1
				if pubsub {
					waitSubscribed(t, e.direct)
				}
				time.Sleep(200 * time.Millisecond) // every waiter has tried and waits

				killed := 0
				for _, c := range e.direct {
					n, err := c.(*redis.Client).ClientKillByFilter(ctx, "TYPE", "pubsub").Result()
					if err != nil {
						t.Fatalf("CLIENT KILL TYPE pubsub: %v", err)
					}
					killed += int(n)
				}
				if pubsub && killed == 0 {
					t.Fatalf("CLIENT KILL TYPE pubsub killed no connection")
				}
				if mode == "unlock-after-resubscribe" && pubsub {
					waitSubscribed(t, e.direct) // go-redis subscribed again
				}
				unlocked := time.Now()
				if err := holder.Unlock(held); err != nil {
					t.Fatalf("holder's Unlock: %v", err)
				}
				for i, ch := range waits {
					r := await(t, fmt.Sprintf("waiter %d", i), ch, 2*prompt)
					if r.err != nil {
						t.Errorf("waiter %d: %v", i, r.err)
						continue
					}
					took := r.at.Sub(unlocked)
					t.Logf("waiter %d acquired %v after the unlock", i, took.Round(time.Millisecond))
					if took > prompt {
						t.Errorf("waiter %d acquired %v after the unlock, want < %v (the lease is 30 s)", i, took, prompt)
					}
				}
			})
		}
	}
}
