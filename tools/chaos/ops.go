package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock"
	"github.com/relock-go/relock/election"
	"github.com/relock-go/relock/lock"
	"github.com/relock-go/relock/redlock"
	"github.com/relock-go/relock/rwlock"
	"github.com/relock-go/relock/semaphore"
)

// side is one way to hold a lock: how to acquire, read the token, release.
type side struct {
	prim, name   string
	size         int64                                                       // a semaphore's size; 0 otherwise
	acquire      func(ctx context.Context, n int64) (context.Context, error) // n: a permit's weight
	token        func(held context.Context) int64
	release      func(held context.Context) error
	maxW, copies int
}

const semSize = 3

// singleLoops are the loops on one Redis (a Sentinel group or a cluster):
// every primitive but the Redlock.
func (w *worker) singleLoops(c redis.UniversalClient) []func(context.Context) {
	wdt := w.lease
	// Replica sync off (timeout 0) where the run asks for it; otherwise
	// the default, which fits itself to the client's read timeout.
	var lo []lock.Option
	var ro []rwlock.Option
	var so []semaphore.Option
	var eo []election.Option
	if !w.sync {
		lo, ro = []lock.Option{lock.WithReplicaSync(0)}, []rwlock.Option{rwlock.WithReplicaSync(0)}
		so, eo = []semaphore.Option{semaphore.WithReplicaSync(0)}, []election.Option{election.WithReplicaSync(0)}
	}
	var sides []side
	for _, name := range []string{"lock-0", "lock-1"} {
		mu := lock.New(c, name, append(lo, lock.WithWatchdogTimeout(wdt))...)
		sides = append(sides, mutexSide("lock", name, mu, 2))
	}
	fair := lock.NewFair(c, "fair-0", append(lo, lock.WithWatchdogTimeout(wdt))...)
	sides = append(sides, mutexSide("fair", "fair-0", fair, 2))
	rw := rwlock.New(c, "rw-0", append(ro, rwlock.WithWatchdogTimeout(wdt))...)
	sides = append(sides,
		side{prim: "rlock", name: "rw-0", copies: 2,
			acquire: func(ctx context.Context, _ int64) (context.Context, error) { return rw.RLock(ctx) },
			token:   rwToken, release: rw.RUnlock},
		side{prim: "wlock", name: "rw-0", copies: 1,
			acquire: func(ctx context.Context, _ int64) (context.Context, error) { return rw.Lock(ctx) },
			token:   rwToken, release: rw.Unlock})
	sem := semaphore.New(c, "sem-0", semSize, append(so, semaphore.WithWatchdogTimeout(wdt))...)
	sides = append(sides, side{prim: "sem", name: "sem-0", size: semSize, copies: 2, maxW: 2,
		acquire: func(ctx context.Context, n int64) (context.Context, error) { return sem.Acquire(ctx, n) },
		token:   func(context.Context) int64 { return 0 }, release: sem.Release})
	var loops []func(context.Context)
	for _, s := range sides {
		for i := range s.copies {
			loops = append(loops, func(ctx context.Context) { w.holdLoop(ctx, s, i) })
		}
	}
	e := election.New(c, "elect-0", append(eo, election.WithWatchdogTimeout(wdt))...)
	return append(loops, func(ctx context.Context) { w.holdLoop(ctx, electionSide(e), 0) },
		func(ctx context.Context) { w.observe(ctx, e) })
}

func mutexSide(prim, name string, mu *lock.Mutex, copies int) side {
	return side{prim: prim, name: name, copies: copies,
		acquire: func(ctx context.Context, _ int64) (context.Context, error) { return mu.Lock(ctx) },
		token: func(held context.Context) int64 {
			t, _ := mu.FencingToken(held)
			return t
		},
		release: mu.Unlock}
}

func rwToken(held context.Context) int64 {
	t, _ := rwlock.FencingToken(held)
	return t
}

func electionSide(e *election.Election) side {
	return side{prim: "election", name: "elect-0",
		acquire: func(ctx context.Context, _ int64) (context.Context, error) { return e.Campaign(ctx, "candidate") },
		token: func(held context.Context) int64 {
			t, _ := election.Epoch(held)
			return t
		},
		release: e.Resign}
}

// redlockLoops: a Redlock over the five masters and a multi-lock over
// three resources on three of them.
func (w *worker) redlockLoops(cs []redis.UniversalClient) []func(context.Context) {
	wdt := w.lease
	var members []redlock.Member
	for _, c := range cs {
		members = append(members, lock.New(c, "rl-0", lock.WithWatchdogTimeout(wdt)))
	}
	rl := redlock.New(members, redlock.WithWatchdogTimeout(wdt))
	multi := redlock.NewMulti([]redlock.Member{
		lock.New(cs[0], "multi-a", lock.WithWatchdogTimeout(wdt)),
		lock.New(cs[1], "multi-b", lock.WithWatchdogTimeout(wdt)),
		lock.New(cs[2], "multi-c", lock.WithWatchdogTimeout(wdt)),
	}, redlock.WithWatchdogTimeout(wdt))
	var loops []func(context.Context)
	for _, s := range []side{redlockSide("redlock", "rl-0", rl), redlockSide("multi", "multi-abc", multi)} {
		for i := range 2 {
			loops = append(loops, func(ctx context.Context) { w.holdLoop(ctx, s, i) })
		}
	}
	return loops
}

func redlockSide(prim, name string, l *redlock.Lock) side {
	return side{prim: prim, name: name,
		acquire: func(ctx context.Context, _ int64) (context.Context, error) { return l.Lock(ctx) },
		token: func(held context.Context) int64 {
			t, _ := l.FencingToken(held)
			return t
		},
		release: l.Unlock}
}

// holdLoop acquires, holds and releases s until ctx ends, recording each
// step.
func (w *worker) holdLoop(ctx context.Context, s side, g int) {
	for n := 0; ctx.Err() == nil; n++ {
		owner := fmt.Sprintf("%s/%s.%d/%d", w.proc, s.prim, g, n)
		weight := int64(0)
		if s.size > 0 {
			weight = 1 + w.rnd.int64n(int64(s.maxW))
		}
		base := Record{Topo: w.topo, Proc: w.proc, Prim: s.prim, Name: s.name, Owner: owner,
			Weight: weight, Size: s.size, NoSync: !w.sync && w.topo != "redlock"}
		actx, cancel := context.WithTimeout(ctx, w.wait)
		rec := base
		rec.Op, rec.Start = opAcquire, now()
		held, err := s.acquire(actx, weight)
		cancel()
		rec.End, rec.OK, rec.Err = now(), err == nil, errText(err)
		if err == nil {
			rec.Token = s.token(held)
		}
		w.rec.add(rec)
		if err != nil {
			sleep(ctx, w.rnd.duration(20*time.Millisecond, 100*time.Millisecond))
			continue
		}
		base.Token = rec.Token
		w.hold(ctx, s, held, base)
		sleep(ctx, w.rnd.duration(0, 50*time.Millisecond))
	}
}

// hold keeps the lock a random while (now and then past a renewal),
// making fenced writes, and ends it by a release, or by its loss.
func (w *worker) hold(ctx context.Context, s side, held context.Context, base Record) {
	d := w.rnd.duration(20*time.Millisecond, 300*time.Millisecond)
	if w.rnd.int64n(10) == 0 { // past a renewal (a third of the lease)
		d = w.rnd.duration(w.lease/2, w.lease)
	}
	end := time.Now().Add(d)
	for {
		wr := base
		wr.Op, wr.Start, wr.OK = opHold, now(), true
		wr.End = wr.Start
		w.rec.add(wr)
		left := time.Until(end)
		if left <= 0 {
			break
		}
		select {
		case <-held.Done():
			lost := base
			// The loop waits on Done alone, so now is when the loss was
			// signalled (a paused process: when it ran again).
			lost.Op, lost.Start, lost.Err = opLost, now(), errText(context.Cause(held))
			lost.End, lost.OK = lost.Start, errors.Is(context.Cause(held), relock.ErrLockLost)
			w.rec.add(lost)
			_ = s.release(held) // frees the local state; the hold is gone
			return
		case <-ctx.Done():
			left = 0
		case <-time.After(min(left, 100*time.Millisecond)):
		}
		if left == 0 {
			break
		}
	}
	rel := base
	rel.Op, rel.Start = opReleasing, now()
	rel.End = rel.Start
	w.rec.add(rel)
	rel.Op = opRelease
	err := s.release(held)
	rel.End, rel.OK, rel.Err = now(), err == nil, errText(err)
	w.rec.add(rel)
}

// observe records every leader the election's observer reports.
func (w *worker) observe(ctx context.Context, e *election.Election) {
	for l := range e.Observe(ctx) {
		t := now()
		w.rec.add(Record{Topo: w.topo, Proc: w.proc, Prim: "observe", Name: e.Name(), Op: opObserve,
			Token: l.Epoch, Start: t, End: t, OK: !l.Vacant()})
	}
}
