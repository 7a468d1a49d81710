//go:build faults && linux

package faults

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/lock"
	"github.com/relock-go/relock/redlock"
	"github.com/relock-go/relock/semaphore"
)

// The semaphore's and the Redlock's rows of TestBound's table.

func semMake(cs []redis.UniversalClient, name string, fixed bool) *boundSubject {
	lease := semaphore.WithWatchdogTimeout(boundLease)
	if fixed {
		lease = semaphore.WithLeaseTime(boundLease)
	}
	return &boundSubject{sem: semaphore.New(cs[0], name, boundPermits, semaphore.WithUnlockTimeout(boundUnlock), lease)}
}

func semHold(ctx context.Context, s *boundSubject, _ holdNeed) (context.Context, func() error, error) {
	h, err := s.sem.Acquire(ctx, 1)
	return h, func() error { return s.sem.Release(h) }, err
}

// semFree checks that every permit is available and that a new owner
// takes them all at once (no waiter is left ahead of it).
func semFree(ctx context.Context, cs []redis.UniversalClient, name string) error {
	s := semaphore.New(cs[0], name, boundPermits)
	n, err := s.Available(ctx)
	if err != nil {
		return fmt.Errorf("Available: %w", err)
	}
	if n != boundPermits {
		return fmt.Errorf("%d of %d permits available", n, boundPermits)
	}
	h, err := s.TryAcquire(ctx, boundPermits)
	if err != nil {
		return fmt.Errorf("another owner's TryAcquire of every permit: %w", err)
	}
	return s.Release(h)
}

func semRows() []*boundRow {
	return []*boundRow{
		acquireRow("Acquire", func(s *boundSubject, c *boundCall) error {
			h, err := s.sem.Acquire(c.acquireCtx(), 1)
			c.keepIf(err, func() error { return s.sem.Release(h) })
			return err
		}),
		acquireRow("TryAcquire", func(s *boundSubject, c *boundCall) error {
			h, err := s.sem.TryAcquire(c.acquireCtx(), 1)
			c.keepIf(err, func() error { return s.sem.Release(h) })
			return err
		}),
		doRow("Do", []string{"acquire", "release"}, func(s *boundSubject, c *boundCall) error {
			return s.sem.Do(c.acquireCtx(), 1, c.fn)
		}),
		releaseRow("Release", needHold, func(s *boundSubject, c *boundCall) error {
			return s.sem.Release(c.held)
		}),
		deadlineRow("Release", needHold, func(s *boundSubject, ctx context.Context) error {
			return s.sem.Release(ctx)
		}),
		holdRow("Extend", needFixed, func(s *boundSubject, c *boundCall) error {
			return s.sem.Extend(c.held, 2*boundLease)
		}),
		holdRow("ForceRelease", needHold, func(s *boundSubject, c *boundCall) error {
			_, err := s.sem.ForceRelease(context.Background())
			return err
		}),
		holdRow("Available", needHold, func(s *boundSubject, c *boundCall) error {
			_, err := s.sem.Available(context.Background())
			return err
		}),
		holdRow("TTL", needHold, func(s *boundSubject, c *boundCall) error {
			_, err := s.sem.TTL(c.held)
			return err
		}),
		// The same size again: a write to Redis that changes nothing, so
		// the new owner of the check agrees on the size.
		holdRow("Resize", needHold, func(s *boundSubject, c *boundCall) error {
			return s.sem.Resize(context.Background(), boundPermits)
		}),
	}
}

// redlockMake makes a Redlock (or a multi-lock) of one lock.Mutex called
// name on each of the three servers. The options go to the Lock alone:
// members that carried their own would have to agree with it.
func redlockMake(multi bool) func([]redis.UniversalClient, string, bool) *boundSubject {
	return func(cs []redis.UniversalClient, name string, fixed bool) *boundSubject {
		members := make([]redlock.Member, len(cs))
		for i, c := range cs {
			members[i] = lock.New(c, name)
		}
		lease := redlock.WithWatchdogTimeout(boundLease)
		if fixed {
			lease = redlock.WithLeaseTime(boundLease)
		}
		opts := []redlock.Option{redlock.WithNodeTimeout(boundNode), redlock.WithUnlockTimeout(boundUnlock), lease}
		s := &boundSubject{members: cs, name: name}
		if multi {
			s.rl = redlock.NewMulti(members, opts...)
		} else {
			s.rl = redlock.New(members, opts...)
		}
		return s
	}
}

// redlockHold takes a hold on all three members. A Lock returns once the
// quorum is won, and a member slower than its grace (a loaded machine) is
// left out of the hold; the cell would then test a hold of two members,
// which one fault undoes. So such a hold is let go and taken again. Drain
// first lets a late attempt join or be given back, so that a key on every
// server is this hold's and nothing else's.
func redlockHold(ctx context.Context, s *boundSubject, _ holdNeed) (context.Context, func() error, error) {
	for attempt := 1; ; attempt++ {
		_ = s.rl.Drain(ctx)
		h, err := s.rl.Lock(ctx)
		if err != nil {
			return nil, nil, err
		}
		let := func() error { return s.rl.Unlock(h) }
		_ = s.rl.Drain(ctx)
		held := 0
		for _, c := range s.members {
			if n, err := c.Exists(ctx, s.name).Result(); err == nil && n == 1 {
				held++
			}
		}
		if held == len(s.members) {
			return h, let, nil
		}
		if err := let(); err != nil {
			return nil, nil, err
		}
		if attempt == 5 {
			return nil, nil, fmt.Errorf("%d tries held %d of %d members", attempt, held, len(s.members))
		}
	}
}

// membersFree checks each member on its own: a Redlock that a quorum would
// still grant may have left its faulted member held.
func membersFree(ctx context.Context, cs []redis.UniversalClient, name string) error {
	for i, c := range cs {
		m := lock.New(c, name)
		h, err := m.TryLock(ctx)
		if err != nil {
			return fmt.Errorf("another owner's TryLock of the member on server %d: %w", i, err)
		}
		if err := m.Unlock(h); err != nil {
			return fmt.Errorf("unlock of the member on server %d: %w", i, err)
		}
	}
	return nil
}

// redlockRows are a Redlock's rows: every call bounded by the node
// timeout, and decided as want says. Lock and Do wait round after round
// (each bounded by the node timeout) until their context's deadline, which
// is then their bound, as for the other primitives; TryLock's one round
// keeps the node timeout. TTL counts a member that does not answer as not
// holding, so it fails neither way; Drain is bounded by its context, and
// measured after a Lock that leaves the faulted member's attempt (and its
// give-back) in the background.
func redlockRows(want outcome) []*boundRow {
	node := func(r *boundRow) *boundRow {
		r.bound, r.want = boundNode, want
		if r.do {
			r.relBound = boundNode
		}
		return r
	}
	waits := func(r *boundRow) *boundRow {
		r = node(r)
		r.bound = boundAcquire
		return r
	}
	ttl := node(holdRow("TTL", needHold, func(s *boundSubject, c *boundCall) error {
		_, err := s.rl.TTL(context.Background())
		return err
	}))
	if want == wantFailure {
		ttl.want = wantAny
	}
	drain := acquireRow("Drain", func(s *boundSubject, c *boundCall) error {
		h, err := s.rl.Lock(c.acquireCtx())
		c.keepIf(err, func() error { return s.rl.Unlock(h) })
		c.restart()
		return s.rl.Drain(c.acquireCtx())
	})
	// The caller's deadline (200 ms) comes before the node timeout here.
	unlockCtx := deadlineRow("Unlock", needHold, func(s *boundSubject, ctx context.Context) error {
		return s.rl.Unlock(ctx)
	})
	unlockCtx.want = want
	return []*boundRow{
		waits(acquireRow("Lock", func(s *boundSubject, c *boundCall) error {
			h, err := s.rl.Lock(c.acquireCtx())
			c.keepIf(err, func() error { return s.rl.Unlock(h) })
			return err
		})),
		node(acquireRow("TryLock", func(s *boundSubject, c *boundCall) error {
			h, err := s.rl.TryLock(c.acquireCtx())
			c.keepIf(err, func() error { return s.rl.Unlock(h) })
			return err
		})),
		waits(doRow("Do", []string{"lock", "unlock"}, func(s *boundSubject, c *boundCall) error {
			return s.rl.Do(c.acquireCtx(), c.fn)
		})),
		node(releaseRow("Unlock", needHold, func(s *boundSubject, c *boundCall) error {
			return s.rl.Unlock(c.held)
		})),
		unlockCtx,
		node(holdRow("Extend", needFixed, func(s *boundSubject, c *boundCall) error {
			return s.rl.Extend(c.held, 2*boundLease)
		})),
		ttl,
		drain,
	}
}
