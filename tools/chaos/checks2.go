package main

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// checkTokens: an acquisition that began after another's reply has a
// larger token (real-time order), per lock.
func (h *history) checkTokens() ([]Anomaly, map[string]int) {
	by := map[string][]Record{}
	for _, r := range h.recs {
		if r.Op == opAcquire && r.OK && r.Token != 0 && r.Prim != "rlock" {
			k := r.Topo + "|" + r.Name
			by[k] = append(by[k], r)
		}
	}
	var out []Anomaly
	n := map[string]int{}
	for _, rs := range by {
		n[rs[0].Topo] += len(rs)
		byStart := slices.Clone(rs)
		slices.SortFunc(byStart, func(a, b Record) int { return cmp64(a.Start, b.Start) })
		slices.SortFunc(rs, func(a, b Record) int { return cmp64(a.End, b.End) })
		var best Record // the largest token among replies before the current start
		j := 0
		for _, r := range byStart {
			for ; j < len(rs) && rs[j].End < r.Start; j++ {
				if rs[j].Token > best.Token {
					best = rs[j]
				}
			}
			if best.Token != 0 && r.Token <= best.Token {
				an := Anomaly{Check: "token monotonicity", Topo: r.Topo, Name: r.Name, From: best.End, To: r.End,
					Detail: fmt.Sprintf("%s got token %d, not above %d of %s, whose reply came first", r.Owner, r.Token, best.Token, best.Owner),
					procs:  []string{r.Proc, best.Proc}, noSync: r.NoSync || best.NoSync}
				h.classify(&an, false)
				out = append(out, an)
			}
		}
	}
	return out, n
}

// fencingStats replays the fenced writes per lock against a store that
// accepts a token only if it is at least the largest seen: how many it
// refused (fencing at work, not an anomaly).
func (h *history) fencingStats() (writes, refused int) {
	by := map[string][]Record{}
	for _, r := range h.recs {
		if r.Op == opHold && r.Token != 0 && r.Prim != "rlock" {
			by[r.Topo+"|"+r.Name] = append(by[r.Topo+"|"+r.Name], r)
		}
	}
	for _, ws := range by {
		slices.SortFunc(ws, func(a, b Record) int { return cmp64(a.Start, b.Start) })
		var top int64
		for _, w := range ws {
			writes++
			if w.Token < top {
				refused++
				continue
			}
			top = w.Token
		}
	}
	return writes, refused
}

// fairPrim are the primitives that serve waiters across processes in
// order (the fair lock and the election on it, the semaphore's line); the
// others let a waiter be overtaken, so no bound holds for them.
var fairPrim = map[string]bool{"fair": true, "election": true, "sem": true}

const unfair = "not fair across processes: a waiter of a plain lock, rwlock or Redlock may be overtaken again and again (wake-ups race; a local release hands over to its own process first)"

// livenessBound is how long a waiter may wait once the faults are over:
// six leases, well above the waits of the contention alone (a few
// waiters behind holds of up to a lease), below a worker's own bound on a
// wait (ten leases).
func (h *history) livenessBound() time.Duration { return 6 * h.lease }

// checkLiveness: an acquisition begun once the faults are over and their
// effects settled (two leases) is served within the bound.
func (h *history) checkLiveness() ([]Anomaly, map[string]int) {
	from := h.quietAt + int64(2*h.lease)
	bound := int64(h.livenessBound())
	var out []Anomaly
	n := map[string]int{}
	for _, r := range h.recs {
		if r.Op != opAcquire || r.Start < from || r.Start > h.stopAt {
			continue
		}
		shutdown := r.End >= h.stopAt || strings.Contains(r.Err, "signal received")
		waited := r.End - r.Start
		if shutdown && h.stopAt-r.Start < bound {
			continue // cut short by the end of the run before its bound
		}
		n[r.Topo]++
		if (r.OK || shutdown) && waited <= bound {
			continue
		}
		an := Anomaly{Check: "liveness", Topo: r.Topo, Name: r.Name, From: r.Start, To: r.End,
			Detail: fmt.Sprintf("%s %s waited %.1fs (bound %v): %s", r.Owner, r.Prim, float64(waited)/1e9,
				h.livenessBound(), orOK(r.Err)), procs: []string{r.Proc}}
		h.classify(&an, false)
		if !fairPrim[r.Prim] {
			if gap := h.unserved(r, from); gap <= starvedAfter*bound {
				an.Class = "expected"
				an.Limit = strings.TrimPrefix(an.Limit+"; "+unfair, "; ")
			} else {
				an.Detail += fmt.Sprintf("; its process was not served on %s for %.0fs", r.Name, float64(gap)/1e9)
			}
		}
		out = append(out, an)
	}
	return out, n
}

// starvedAfter is how many liveness bounds a process may go unserved on
// a lock it keeps asking for before unfairness no longer explains it:
// overtaken waiters are served late, while a process whose wake-ups no
// longer arrive is not served at all.
const starvedAfter = 4

// unserved is how long r's process had gone without acquiring r's lock
// (in any mode) when r ended: since its last success, or since from, or
// its first try, whichever is latest.
func (h *history) unserved(r Record, from int64) int64 {
	first, last := int64(math.MaxInt64), int64(0)
	for _, o := range h.recs {
		if o.Op != opAcquire || o.Proc != r.Proc || o.Name != r.Name || o.End > r.End {
			continue
		}
		first = min(first, o.Start)
		if o.OK {
			last = max(last, o.End)
		}
	}
	return r.End - max(last, first, from)
}

func orOK(s string) string {
	if s == "" {
		return "served late"
	}
	return s
}

// checkKeyspace: no key is left without a TTL once the workers are gone.
func (h *history) checkKeyspace(keys []KeyLeft) []Anomaly {
	var out []Anomaly
	for _, k := range keys {
		out = append(out, Anomaly{Check: "keyspace drained", Topo: k.Topo, Name: k.Key, From: h.stopAt, To: h.stopAt,
			Detail: fmt.Sprintf("%s on %s has no TTL", k.Key, k.Server), Class: "violation"})
	}
	return out
}

// checkers in the order of the report.
var checkNames = []string{"mutual exclusion", "readers vs writer", "semaphore bound", "one leader",
	"token monotonicity", "liveness", "keyspace drained"}

// runChecks runs every checker and sums them up per topology.
func (h *history) runChecks(topos []string, keys []KeyLeft) ([]Verdict, []Anomaly) {
	var all []Anomaly
	counts := map[string]map[string]int{}
	for i, c := range []func() ([]Anomaly, map[string]int){h.checkMutex, h.checkRW, h.checkSemaphore,
		h.checkElection, h.checkTokens, h.checkLiveness} {
		as, n := c()
		all = append(all, as...)
		counts[checkNames[i]] = n
	}
	keyCount := map[string]int{}
	for _, t := range topos {
		keyCount[t] = 1 // one scan of its masters
	}
	counts["keyspace drained"] = keyCount
	all = append(all, h.checkKeyspace(keys)...)
	slices.SortFunc(all, func(a, b Anomaly) int { return cmp64(a.From, b.From) })
	writes, refused := h.fencingStats()
	var vs []Verdict
	for _, t := range topos {
		for _, c := range checkNames {
			v := Verdict{Check: c, Topo: t, Checked: counts[c][t]}
			for _, a := range all {
				if a.Topo == t && a.Check == c {
					if a.Class == "violation" {
						v.Violated++
					} else {
						v.Expected++
					}
				}
			}
			v.Verdict = verdictOf(v)
			if c == "mutual exclusion" {
				v.Note = fmt.Sprintf("fencing store: %d writes, %d refused (all topologies)", writes, refused)
			}
			vs = append(vs, v)
		}
	}
	return vs, all
}

func verdictOf(v Verdict) string {
	switch {
	case v.Violated > 0:
		return "fail"
	case v.Expected > 0:
		return "expected"
	case v.Checked == 0:
		return "n/a"
	}
	return "pass"
}
