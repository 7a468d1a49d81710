package election

import (
	"context"
	"strconv"
	"strings"
	"time"
)

// state is what an observer knows of an election: a leadership at a
// revision (Proclaim raises it), or vacancy after the epoch that ended.
type state struct {
	Leader
	rev    int64
	vacant bool
	ended  int64         // vacant: the epoch that ended, 0 when not known
	lease  time.Duration // the leadership's lease
	pttl   time.Duration // read: how long its hold has left on the server
}

// parseMessage reads a change message: "L\t<epoch>\t<rev>\t<since
// ms>\t<lease ms>\t<value>" (elected, proclaimed) or "V\t<epoch>"
// (resigned), as lua/elect.lua, proclaim.lua and resign.lua publish them.
func parseMessage(p string) (state, bool) {
	kind, rest, _ := strings.Cut(p, "\t")
	switch kind {
	case "V":
		ep, err := strconv.ParseInt(rest, 10, 64)
		return state{vacant: true, ended: ep}, err == nil && ep > 0
	case "L":
		f := strings.SplitN(rest, "\t", 5)
		if len(f) != 5 {
			return state{}, false
		}
		var n [4]int64
		for i := range n {
			v, err := strconv.ParseInt(f[i], 10, 64)
			if err != nil {
				return state{}, false
			}
			n[i] = v
		}
		lease := time.Duration(n[3]) * time.Millisecond
		return state{Leader: Leader{Value: f[4], Epoch: n[0], Since: time.UnixMilli(n[2])}, rev: n[1],
			lease: lease, pttl: lease}, n[0] > 0
	}
	return state{}, false
}

// observer turns messages and reads into Observe's changes, each once, in
// order; a newer epoch always follows a vacancy, heard or not.
type observer struct {
	cur   state
	known bool
}

// next returns the states to report on learning s, and records them.
func (o *observer) next(s state) []state {
	if !o.known {
		o.cur, o.known = s, true
		return []state{s}
	}
	cur := o.cur
	if s.vacant {
		// A read's vacancy (ended unknown) is now; a message's may be of
		// an older leadership than the one reported.
		if cur.vacant || (s.ended != 0 && s.ended != cur.Epoch) {
			return nil
		}
		o.cur = state{vacant: true, ended: cur.Epoch}
		return []state{o.cur}
	}
	switch {
	case cur.vacant && s.Epoch <= cur.ended:
		return nil // a leadership already reported ended
	case cur.vacant:
		o.cur = s
		return []state{s}
	case s.Epoch < cur.Epoch || (s.Epoch == cur.Epoch && s.rev <= cur.rev):
		return nil // older news
	case s.Epoch == cur.Epoch:
		o.cur = s // proclaimed
		return []state{s}
	}
	gap := state{vacant: true, ended: cur.Epoch}
	o.cur = s
	return []state{gap, s}
}

// Observe reports the election's state: the current one first, then every
// change (elected, proclaimed, resigned, lost; a vacancy is the zero
// Leader), each once and in order, until ctx ends and the channel closes.
// A message missed (a reconnect, a failover) or never sent (a crashed
// leader) is made good by reading the record at least every third of the
// lease and when the leader's lease would lapse, so a lapsed lease is
// reported within a round trip. A slow consumer delays reports, never
// reorders them; past 16,384 waiting, the oldest are dropped. On an
// Election New refused, the channel is closed at once.
func (e *Election) Observe(ctx context.Context) <-chan Leader {
	out := make(chan Leader)
	if e.ident().Check("observe", ctx, unmade) != nil {
		close(out)
		return out
	}
	go e.observe(ctx, out)
	return out
}

// maxPending bounds the reports kept for a slow consumer (oldest dropped).
const maxPending = 1 << 14

// observe runs one Observe until ctx ends, taking messages while its
// consumer is slow so the hub's buffer never overflows for it.
func (e *Election) observe(ctx context.Context, out chan<- Leader) {
	defer close(out)
	// What the hub's watcher hands over: messages, and misses ("").
	msgs, missed := make(chan string, 1024), make(chan struct{}, 1)
	hear := func(payload string) {
		if payload != "" {
			select {
			case msgs <- payload:
				return
			default: // full: the next read makes good what did not fit
			}
		}
		select {
		case missed <- struct{}{}:
		default:
		}
	}
	var stop func()
	subscribe := func() {
		if stop == nil {
			stop, _ = e.hub.Watch(context.WithoutCancel(ctx), e.channel, hear)
		}
	}
	subscribe() // before the first read, so nothing falls between
	defer func() {
		if stop != nil {
			stop()
		}
	}()
	var o observer
	var pending []Leader
	timer := time.NewTimer(0) // the first read at once
	defer timer.Stop()
	for {
		var send chan<- Leader // nil, so not chosen, while nothing waits
		var head Leader
		if len(pending) > 0 {
			send, head = out, pending[0]
		}
		var s state
		var ok bool
		select {
		case <-ctx.Done():
			return
		case send <- head:
			pending = pending[1:]
			continue
		case p := <-msgs:
			s, ok = parseMessage(p)
		case <-missed:
			s, ok = e.readState(ctx)
		case <-timer.C:
			subscribe() // again, if it failed
			s, ok = e.readState(ctx)
		}
		if !ok {
			// a read failed, or a message was garbled: read again soon
			timer.Reset(min(max(e.cfg.Lease()/30, 10*time.Millisecond), time.Second))
			continue
		}
		for _, r := range o.next(s) {
			pending = append(pending, r.Leader)
		}
		if len(pending) > maxPending {
			pending = pending[len(pending)-maxPending:]
		}
		timer.Reset(e.nextRead(o.cur, s))
	}
}

// readState reads the record; a failed read is retried at the next timer.
func (e *Election) readState(ctx context.Context) (state, bool) {
	s, err := e.read(ctx)
	return s, err == nil
}

// nextRead is when to read the record again after s: a third of the
// lease, or sooner when the leader's hold would lapse (pttl).
func (e *Election) nextRead(cur, s state) time.Duration {
	lease := e.cfg.Lease()
	if !cur.vacant && cur.lease > 0 {
		lease = cur.lease
	}
	d := max(lease/3, time.Millisecond)
	if !cur.vacant && s.pttl > 0 && s.Epoch == cur.Epoch {
		d = min(d, s.pttl+time.Millisecond)
	}
	return d
}
