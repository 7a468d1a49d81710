//go:build faults && linux

package faults

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/lock"
	"github.com/relock-go/relock/redlock"
	"github.com/relock-go/relock/rwlock"
	"github.com/relock-go/relock/semaphore"
)

// boundPermits is the size of the table's semaphores; a hold takes one.
const boundPermits = 2

// boundCallerDeadline is the deadline of the context the "/ctx" rows pass
// to a release: shorter than the unlock timeout, so the caller's deadline
// comes first and bounds the call.
const boundCallerDeadline = 200 * time.Millisecond

// holdNeed is what a row's call needs held before the fault.
type holdNeed int

const (
	needNone  holdNeed = iota // nothing: the call takes its own hold, if any
	needHold                  // a hold (an RWMutex's write hold) on the watchdog lease
	needFixed                 // a hold on a fixed lease, which Extend needs
	needRead                  // an RWMutex's read hold
)

// outcome is what a row's call must return, beside keeping its bound.
type outcome int

const (
	wantAny     outcome = iota
	wantSuccess         // a Redlock whose quorum answers
	wantFailure         // a multi-lock one of whose members does not
)

// boundRow is one method of one primitive, as the table calls it.
type boundRow struct {
	method   string
	need     holdNeed
	releases bool // the call itself lets go of the hold taken for it
	bound    time.Duration
	// do marks a Do: bound is its acquiring half's, relBound its
	// releasing half's, measured around fn.
	do       bool
	relBound time.Duration
	want     outcome
	ops      []string // the operations its error may name
	call     func(s *boundSubject, c *boundCall) error
}

func (r *boundRow) boundText() string {
	if r.do {
		return fmt.Sprintf("%d+%d", r.bound.Milliseconds(), r.relBound.Milliseconds())
	}
	return fmt.Sprint(r.bound.Milliseconds())
}

// boundSubject is one cell's primitive: one of the fields is set.
type boundSubject struct {
	mu  *lock.Mutex
	rw  *rwlock.RWMutex
	sem *semaphore.Semaphore
	rl  *redlock.Lock
	// members are a Redlock's clients, one per member called name.
	members []redis.UniversalClient
	name    string
}

// boundPrim is a primitive of the table: how a cell makes it on its
// clients, takes a hold of it, and checks (as another owner, on clients
// straight to the servers) that nothing of it is left held.
type boundPrim struct {
	label   string
	masters int
	make    func(cs []redis.UniversalClient, name string, fixed bool) *boundSubject
	hold    func(ctx context.Context, s *boundSubject, need holdNeed) (context.Context, func() error, error)
	free    func(ctx context.Context, cs []redis.UniversalClient, name string) error
	rows    []*boundRow
}

var boundPrims = []*boundPrim{
	{"lock", 1, mutexMake(false), mutexHold, mutexFree(false), mutexRows()},
	{"fair", 1, mutexMake(true), mutexHold, mutexFree(true), mutexRows()},
	{"rwlock", 1, rwMake, rwHold, rwFree, append(rwAcquireRows(), rwHoldRows()...)},
	{"semaphore", 1, semMake, semHold, semFree, semRows()},
	{"redlock", 3, redlockMake(false), redlockHold, membersFree, redlockRows(wantSuccess)},
	{"multi", 3, redlockMake(true), redlockHold, membersFree, redlockRows(wantFailure)},
}

// acquireRow is a call that takes a hold, bounded by its context.
func acquireRow(method string, call func(*boundSubject, *boundCall) error) *boundRow {
	return &boundRow{method: method, bound: boundAcquire, ops: []string{method}, call: call}
}

// doRow is a Do: acquired within its context's deadline, released within
// the unlock timeout; its error may name Do or either half.
func doRow(method string, ops []string, call func(*boundSubject, *boundCall) error) *boundRow {
	return &boundRow{method: method, bound: boundAcquire, do: true, relBound: boundUnlock,
		ops: append([]string{method}, ops...), call: call}
}

// holdRow is a call on a hold taken before the fault (or an inspection
// beside it), bounded by the unlock timeout.
func holdRow(method string, need holdNeed, call func(*boundSubject, *boundCall) error) *boundRow {
	return &boundRow{method: method, need: need, bound: boundUnlock, ops: []string{method}, call: call}
}

// releaseRow is a call that lets go of the hold taken for it.
func releaseRow(method string, need holdNeed, call func(*boundSubject, *boundCall) error) *boundRow {
	r := holdRow(method, need, call)
	r.releases = true
	return r
}

// deadlineRow is a release made with a context that carries the hold and
// a deadline shorter than the unlock timeout.
func deadlineRow(method string, need holdNeed, call func(s *boundSubject, ctx context.Context) error) *boundRow {
	r := releaseRow(method+"/ctx", need, func(s *boundSubject, c *boundCall) error {
		return call(s, c.deadlineCtx())
	})
	r.bound = boundCallerDeadline
	r.ops = []string{method}
	return r
}

func mutexMake(fair bool) func([]redis.UniversalClient, string, bool) *boundSubject {
	return func(cs []redis.UniversalClient, name string, fixed bool) *boundSubject {
		lease := lock.WithWatchdogTimeout(boundLease)
		if fixed {
			lease = lock.WithLeaseTime(boundLease)
		}
		opts := []lock.Option{lock.WithUnlockTimeout(boundUnlock), lease}
		if fair {
			return &boundSubject{mu: lock.NewFair(cs[0], name, opts...)}
		}
		return &boundSubject{mu: lock.New(cs[0], name, opts...)}
	}
}

func mutexHold(ctx context.Context, s *boundSubject, _ holdNeed) (context.Context, func() error, error) {
	h, err := s.mu.Lock(ctx)
	return h, func() error { return s.mu.Unlock(h) }, err
}

// mutexFree checks that a new owner takes the lock at once.
func mutexFree(fair bool) func(context.Context, []redis.UniversalClient, string) error {
	return func(ctx context.Context, cs []redis.UniversalClient, name string) error {
		m := lock.New(cs[0], name)
		if fair {
			m = lock.NewFair(cs[0], name)
		}
		h, err := m.TryLock(ctx)
		if err != nil {
			return fmt.Errorf("another owner's TryLock: %w", err)
		}
		return m.Unlock(h)
	}
}

func mutexRows() []*boundRow {
	return []*boundRow{
		acquireRow("Lock", func(s *boundSubject, c *boundCall) error {
			h, err := s.mu.Lock(c.acquireCtx())
			c.keepIf(err, func() error { return s.mu.Unlock(h) })
			return err
		}),
		acquireRow("TryLock", func(s *boundSubject, c *boundCall) error {
			h, err := s.mu.TryLock(c.acquireCtx())
			c.keepIf(err, func() error { return s.mu.Unlock(h) })
			return err
		}),
		doRow("Do", []string{"lock", "unlock"}, func(s *boundSubject, c *boundCall) error {
			return s.mu.Do(c.acquireCtx(), c.fn)
		}),
		releaseRow("Unlock", needHold, func(s *boundSubject, c *boundCall) error {
			return s.mu.Unlock(c.held)
		}),
		deadlineRow("Unlock", needHold, func(s *boundSubject, ctx context.Context) error {
			return s.mu.Unlock(ctx)
		}),
		holdRow("Extend", needFixed, func(s *boundSubject, c *boundCall) error {
			return s.mu.Extend(c.held, 2*boundLease)
		}),
		holdRow("ForceUnlock", needHold, func(s *boundSubject, c *boundCall) error {
			_, err := s.mu.ForceUnlock(context.Background())
			return err
		}),
		holdRow("HoldCount", needHold, func(s *boundSubject, c *boundCall) error {
			_, err := s.mu.HoldCount(c.held)
			return err
		}),
		holdRow("IsLocked", needHold, func(s *boundSubject, c *boundCall) error {
			_, err := s.mu.IsLocked(context.Background())
			return err
		}),
		holdRow("TTL", needHold, func(s *boundSubject, c *boundCall) error {
			_, err := s.mu.TTL(context.Background())
			return err
		}),
	}
}

func rwMake(cs []redis.UniversalClient, name string, fixed bool) *boundSubject {
	lease := rwlock.WithWatchdogTimeout(boundLease)
	if fixed {
		lease = rwlock.WithLeaseTime(boundLease)
	}
	return &boundSubject{rw: rwlock.New(cs[0], name, rwlock.WithUnlockTimeout(boundUnlock), lease)}
}

func rwHold(ctx context.Context, s *boundSubject, need holdNeed) (context.Context, func() error, error) {
	if need == needRead {
		h, err := s.rw.RLock(ctx)
		return h, func() error { return s.rw.RUnlock(h) }, err
	}
	h, err := s.rw.Lock(ctx)
	return h, func() error { return s.rw.Unlock(h) }, err
}

// rwFree checks that a new owner takes the write lock at once: no reader,
// no writer, and no writer waiting ahead of it.
func rwFree(ctx context.Context, cs []redis.UniversalClient, name string) error {
	rw := rwlock.New(cs[0], name)
	h, err := rw.TryLock(ctx)
	if err != nil {
		return fmt.Errorf("another owner's TryLock (write): %w", err)
	}
	return rw.Unlock(h)
}

func rwAcquireRows() []*boundRow {
	return []*boundRow{
		acquireRow("RLock", func(s *boundSubject, c *boundCall) error {
			h, err := s.rw.RLock(c.acquireCtx())
			c.keepIf(err, func() error { return s.rw.RUnlock(h) })
			return err
		}),
		acquireRow("TryRLock", func(s *boundSubject, c *boundCall) error {
			h, err := s.rw.TryRLock(c.acquireCtx())
			c.keepIf(err, func() error { return s.rw.RUnlock(h) })
			return err
		}),
		doRow("RDo", []string{"rlock", "runlock"}, func(s *boundSubject, c *boundCall) error {
			return s.rw.RDo(c.acquireCtx(), c.fn)
		}),
		acquireRow("Lock", func(s *boundSubject, c *boundCall) error {
			h, err := s.rw.Lock(c.acquireCtx())
			c.keepIf(err, func() error { return s.rw.Unlock(h) })
			return err
		}),
		acquireRow("TryLock", func(s *boundSubject, c *boundCall) error {
			h, err := s.rw.TryLock(c.acquireCtx())
			c.keepIf(err, func() error { return s.rw.Unlock(h) })
			return err
		}),
		doRow("Do", []string{"lock", "unlock"}, func(s *boundSubject, c *boundCall) error {
			return s.rw.Do(c.acquireCtx(), c.fn)
		}),
	}
}

func rwHoldRows() []*boundRow {
	return []*boundRow{
		releaseRow("RUnlock", needRead, func(s *boundSubject, c *boundCall) error {
			return s.rw.RUnlock(c.held)
		}),
		deadlineRow("RUnlock", needRead, func(s *boundSubject, ctx context.Context) error {
			return s.rw.RUnlock(ctx)
		}),
		releaseRow("Unlock", needHold, func(s *boundSubject, c *boundCall) error {
			return s.rw.Unlock(c.held)
		}),
		deadlineRow("Unlock", needHold, func(s *boundSubject, ctx context.Context) error {
			return s.rw.Unlock(ctx)
		}),
		// The write hold stays kept: after a Downgrade its Unlock finds
		// it ended (nil); after a failed one it lets it go.
		holdRow("Downgrade", needHold, func(s *boundSubject, c *boundCall) error {
			r, err := s.rw.Downgrade(c.held)
			c.keepIf(err, func() error { return s.rw.RUnlock(r) })
			return err
		}),
		holdRow("Extend", needFixed, func(s *boundSubject, c *boundCall) error {
			return s.rw.Extend(c.held, 2*boundLease)
		}),
		holdRow("ForceUnlock", needHold, func(s *boundSubject, c *boundCall) error {
			_, err := s.rw.ForceUnlock(context.Background())
			return err
		}),
		holdRow("HoldCount", needHold, func(s *boundSubject, c *boundCall) error {
			_, _, err := s.rw.HoldCount(c.held)
			return err
		}),
		holdRow("IsLocked", needHold, func(s *boundSubject, c *boundCall) error {
			_, err := s.rw.IsLocked(context.Background())
			return err
		}),
		holdRow("TTL", needHold, func(s *boundSubject, c *boundCall) error {
			_, err := s.rw.TTL(context.Background())
			return err
		}),
	}
}
