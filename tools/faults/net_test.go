//go:build faults

package faults

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/relock-go/relock/lock"
)

// faultLease is the lease of the holds that a fault takes away: renewed by
// the watchdog every 500 ms, so a loss is told within about a second and a
// half, and long enough that the watchdog's margin (a tick and 1%) is real.
const faultLease = 1500 * time.Millisecond

// TestFaultLatencyAboveLease delays the holder's link to Redis by more than
// the lease while the watchdog keeps the hold: the renewals cannot be
// confirmed in time, so the holder must be told (ErrLockLost) before the
// lease can lapse on the server, hence before another owner (a client not
// behind the proxy, waiting all along) can acquire.
func TestFaultLatencyAboveLease(t *testing.T) {
	const delay = 2 * time.Second // each way; above the lease
	for _, p := range prims {
		t.Run(p.name, func(t *testing.T) {
			checkLeaks(t)
			e := newEnv(t, p.masters, true)
			name := lockName(t)
			opt := faultLease
			holder := p.a(e.proxied, name, opt)
			other := p.b(e.direct, name, opt)

			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			held, err := holder.Lock(ctx)
			if err != nil {
				t.Fatalf("holder: %v", err)
			}
			from := time.Now()
			end := watchEnd(held)
			var wg sync.WaitGroup
			defer wg.Wait()
			got := goLock(ctx, other, &wg)

			// A renewal goes through the clean proxy first: the hold is
			// kept past a third of the lease and the other owner waits.
			time.Sleep(faultLease / 2)
			if err := held.Err(); err != nil {
				t.Fatalf("hold ended before any fault: %v", context.Cause(held))
			}
			select {
			case r := <-got:
				t.Fatalf("other owner returned while the hold was renewed: %v", r.err)
			default:
			}

			injected := time.Now()
			e.latency(t, delay)
			told := end.told(t, "holder", faultLease+3*time.Second)
			if told.Before(injected) {
				t.Errorf("holder told at %v, before the latency was injected", told.Sub(injected))
			}
			r := await(t, "other owner", got, faultLease+5*time.Second)
			if r.err != nil {
				t.Fatalf("other owner: %v", r.err)
			}
			t.Logf("holder told %v after the injection; other owner acquired %v after it",
				told.Sub(injected).Round(time.Millisecond), r.at.Sub(told).Round(time.Millisecond))
			checkNoOverlap(t, interval{"holder", from, told}, interval{"other owner", r.at, time.Now()})

			// The delayed renewals reach Redis once the other owner holds:
			// they must not take the lock back or disturb the new hold.
			time.Sleep(time.Until(injected.Add(delay + 300*time.Millisecond)))
			if err := r.held.Err(); err != nil {
				t.Errorf("new hold ended after the old holder's late renewals: %v", context.Cause(r.held))
			}
			// Side a conflicts with the other owner's side b (a reader
			// would share a reader's hold).
			third := p.a(e.clients(t), name, opt)
			if h, err := third.TryLock(ctx); !errors.Is(err, lock.ErrNotAcquired) {
				t.Errorf("third owner's TryLock while the other owner holds: %v, want ErrNotAcquired", err)
				if err == nil {
					_ = third.Unlock(h)
				}
			}

			e.clear()
			if err := holder.Unlock(held); !errors.Is(err, lock.ErrLockLost) {
				t.Errorf("holder's Unlock after the loss: %v, want ErrLockLost", err)
			}
			if err := other.Unlock(r.held); err != nil {
				t.Errorf("other owner's Unlock: %v", err)
			}
		})
	}
}

// TestFaultPartitionMidHold cuts the holder off from Redis (the proxy is
// disabled: connections closed, new ones refused) while it holds. The
// holder must be told of the loss; another owner, trying all along, must
// not get the lock before the lease lapses, and must get it then; the
// holder must not get it back after the link heals.
func TestFaultPartitionMidHold(t *testing.T) {
	for _, p := range prims {
		t.Run(p.name, func(t *testing.T) {
			checkLeaks(t)
			e := newEnv(t, p.masters, true)
			name := lockName(t)
			opt := faultLease
			holder := p.a(e.proxied, name, opt)
			other := p.b(e.direct, name, opt)

			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			held, err := holder.Lock(ctx)
			if err != nil {
				t.Fatalf("holder: %v", err)
			}
			from := time.Now()
			end := watchEnd(held)
			time.Sleep(faultLease / 2) // renewed once through the proxy

			cut := time.Now()
			e.partition()
			// The other owner tries every 20 ms until it gets the lock.
			var got context.Context
			var gotAt time.Time
			for deadline := cut.Add(faultLease + 5*time.Second); got == nil; {
				if time.Now().After(deadline) {
					t.Fatalf("other owner did not get the lock within %v of the partition", time.Since(cut))
				}
				h, err := other.TryLock(ctx)
				switch {
				case err == nil:
					got, gotAt = h, time.Now()
				case !errors.Is(err, lock.ErrNotAcquired):
					t.Fatalf("other owner's TryLock: %v", err)
				default:
					time.Sleep(20 * time.Millisecond)
				}
			}
			told := end.told(t, "holder", 2*time.Second)
			t.Logf("holder told %v after the partition; other owner acquired %v after it",
				told.Sub(cut).Round(time.Millisecond), gotAt.Sub(cut).Round(time.Millisecond))
			checkNoOverlap(t, interval{"holder", from, told}, interval{"other owner", gotAt, time.Now()})
			// The last renewal before the cut was at most a third of the
			// lease earlier, so Redis kept the hold at least the rest.
			if early := cut.Add(faultLease / 2); gotAt.Before(early) {
				t.Errorf("other owner acquired %v after the partition, before the lease could lapse",
					gotAt.Sub(cut))
			}

			e.heal(t)
			if err := holder.Unlock(held); !errors.Is(err, lock.ErrLockLost) {
				t.Errorf("holder's Unlock after the partition: %v, want ErrLockLost", err)
			}
			// Healed, the holder's client reaches Redis again (once it has
			// reconnected) and finds the lock taken.
			err = retryUntil(5*time.Second, func() error {
				h, err := holder.TryLock(ctx)
				if err == nil {
					_ = holder.Unlock(h)
					return errors.New("holder took the lock back while the other owner holds it")
				}
				if errors.Is(err, lock.ErrNotAcquired) {
					return nil
				}
				return err
			})
			if err != nil {
				t.Errorf("holder's TryLock after the heal: %v, want ErrNotAcquired", err)
			}
			if err := other.Unlock(got); err != nil {
				t.Errorf("other owner's Unlock: %v", err)
			}
		})
	}
}

// TestFaultPartitionMidWait cuts two waiters off from Redis while another
// owner (not behind the proxy) holds the lock: the waiter with a deadline
// returns at its deadline with an error that names the operation and the
// lock; the one without keeps waiting through the partition and acquires
// after it heals, although the unlock message was published during the
// partition.
func TestFaultPartitionMidWait(t *testing.T) {
	for _, p := range prims {
		t.Run(p.name, func(t *testing.T) {
			checkLeaks(t)
			e := newEnv(t, p.masters, true)
			name := lockName(t)
			// The default lease (30 s): the waiters' fallback timer does
			// not fire during the test, only the faults wake them.
			holder := p.b(e.direct, name)
			waiter := p.a(e.proxied, name)

			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			held, err := holder.Lock(ctx)
			if err != nil {
				t.Fatalf("holder: %v", err)
			}
			var wg sync.WaitGroup
			defer wg.Wait()
			const bound = 1500 * time.Millisecond
			bctx, bcancel := context.WithTimeout(context.Background(), bound)
			defer bcancel()
			deadline, _ := bctx.Deadline()
			bounded := goLock(bctx, waiter, &wg)
			// No deadline: only the end of the test (cancel) could stop it.
			uctx, ucancel := context.WithCancel(context.Background())
			defer ucancel()
			unbounded := goLock(uctx, waiter, &wg)
			if p.masters == 1 {
				waitSubscribed(t, e.direct)
			}
			time.Sleep(200 * time.Millisecond) // both have tried and wait

			cut := time.Now()
			e.partition()
			r := await(t, "waiter with a deadline", bounded, bound+10*time.Second)
			switch {
			case r.err == nil:
				_ = waiter.Unlock(r.held)
				t.Fatalf("waiter with a deadline acquired during the partition")
			case !errors.Is(r.err, context.DeadlineExceeded):
				t.Errorf("waiter with a deadline: %v, want its deadline exceeded", r.err)
			case r.at.Before(deadline):
				t.Errorf("waiter with a deadline returned %v before it: %v", deadline.Sub(r.at), r.err)
			case r.at.Sub(deadline) > 2*time.Second:
				// A round trip or a client timeout (1 s) late is fair; more
				// is work the deadline should have cut short.
				t.Errorf("waiter with a deadline returned %v after its deadline: %v",
					r.at.Sub(deadline).Round(time.Millisecond), r.err)
			}
			checkNamed(t, r.err, name)
			t.Logf("waiter with a deadline returned %v after it: %v", r.at.Sub(deadline).Round(time.Millisecond), r.err)

			// The unlock message is published while the waiter is cut off.
			if err := holder.Unlock(held); err != nil {
				t.Fatalf("holder's Unlock: %v", err)
			}
			time.Sleep(500 * time.Millisecond)
			select {
			case r := <-unbounded:
				if r.err == nil {
					_ = waiter.Unlock(r.held)
				}
				e.heal(t)
				t.Fatalf("waiter without a deadline returned during the partition (%v after the cut): %v",
					r.at.Sub(cut).Round(time.Millisecond), r.err)
			default:
			}

			healed := time.Now()
			e.heal(t)
			r = await(t, "waiter without a deadline", unbounded, 15*time.Second)
			if r.err != nil {
				t.Fatalf("waiter without a deadline, after the heal: %v", r.err)
			}
			t.Logf("waiter without a deadline acquired %v after the heal", r.at.Sub(healed).Round(time.Millisecond))
			if took := r.at.Sub(healed); took > 10*time.Second {
				t.Errorf("waiter without a deadline acquired %v after the heal, want well under the 30 s lease", took)
			}
			if err := waiter.Unlock(r.held); err != nil {
				t.Errorf("waiter's Unlock: %v", err)
			}
		})
	}
}
