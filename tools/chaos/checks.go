package main

import (
	"fmt"
	"slices"
	"strings"
)

// exclusive prims: holds of one name never overlap.
var exclusive = map[string]bool{"lock": true, "fair": true, "redlock": true, "multi": true, "election": true}

// group returns the holds of each (topology, name) that keep satisfies.
func (h *history) group(keep func(Hold) bool) map[string][]Hold {
	m := map[string][]Hold{}
	for _, x := range h.holds {
		if keep(x) {
			k := x.Topo + "|" + x.Name
			m[k] = append(m[k], x)
		}
	}
	return m
}

// overlaps calls f for each pair of holds (sorted by From) that overlap,
// the earlier first, when conflict says the pair excludes each other.
func overlaps(hs []Hold, conflict func(a, b Hold) bool, f func(a, b Hold)) int {
	pairs := 0
	for i, a := range hs {
		for _, b := range hs[i+1:] {
			if b.From >= a.To {
				break
			}
			pairs++
			if conflict(a, b) && b.From < a.To {
				f(a, b)
			}
		}
	}
	return pairs
}

// checkExclusion: holds of a lock never overlap, unless the later one has
// the larger token (fenced). Readers only conflict with writers.
func (h *history) checkExclusion(check string, keep func(Hold) bool, conflict func(a, b Hold) bool) ([]Anomaly, map[string]int) {
	var out []Anomaly
	n := map[string]int{}
	for _, hs := range h.group(keep) {
		n[hs[0].Topo] += len(hs)
		overlaps(hs, conflict, func(a, b Hold) {
			an := Anomaly{Check: check, Topo: a.Topo, Name: a.Name, From: b.From, To: min(a.To, b.To),
				Detail: fmt.Sprintf("%s (%s) overlaps %s for %.1f ms", b, b.Ended, a,
					float64(min(a.To, b.To)-b.From)/1e6), procs: []string{a.Proc, b.Proc}, noSync: a.NoSync || b.NoSync}
			// A reader makes no writes for a token to fence: only an
			// older writer (or lock holder) is fenced off.
			h.classify(&an, a.Prim != "rlock" && a.Token != 0 && b.Token > a.Token)
			out = append(out, an)
		})
	}
	return out, n
}

func (h *history) checkMutex() ([]Anomaly, map[string]int) {
	return h.checkExclusion("mutual exclusion",
		func(x Hold) bool { return exclusive[x.Prim] && x.Prim != "election" },
		func(a, b Hold) bool { return true })
}

func (h *history) checkRW() ([]Anomaly, map[string]int) {
	return h.checkExclusion("readers vs writer",
		func(x Hold) bool { return x.Prim == "rlock" || x.Prim == "wlock" },
		func(a, b Hold) bool { return a.Prim == "wlock" || b.Prim == "wlock" })
}

// checkSemaphore: the weights of the permits held at once never exceed
// the size.
func (h *history) checkSemaphore() ([]Anomaly, map[string]int) {
	var out []Anomaly
	n := map[string]int{}
	for _, hs := range h.group(func(x Hold) bool { return x.Prim == "sem" }) {
		n[hs[0].Topo] += len(hs)
		type ev struct {
			at int64
			w  int64
			h  Hold
		}
		var evs []ev
		for _, x := range hs {
			evs = append(evs, ev{x.From, x.Weight, x}, ev{x.To, -x.Weight, x})
		}
		// Ends before starts at the same instant: a hand-over is no overlap.
		slices.SortFunc(evs, func(a, b ev) int {
			if c := cmp64(a.at, b.at); c != 0 {
				return c
			}
			return cmp64(a.w, b.w)
		})
		var used int64
		held := map[string]Hold{}
		var open *Anomaly
		for _, e := range evs {
			used += e.w
			if e.w > 0 {
				held[e.h.Owner] = e.h
			} else {
				delete(held, e.h.Owner)
			}
			size := e.h.Size
			switch {
			case used > size && open == nil:
				var who []string
				var procs []string
				noSync := false
				for _, x := range held {
					who = append(who, fmt.Sprintf("%s w%d", x.Owner, x.Weight))
					procs = append(procs, x.Proc)
					noSync = noSync || x.NoSync
				}
				slices.Sort(who)
				open = &Anomaly{Check: "semaphore bound", Topo: e.h.Topo, Name: e.h.Name, From: e.at,
					Detail: fmt.Sprintf("%d of %d permits held: %s", used, size, strings.Join(who, ", ")), procs: procs, noSync: noSync}
			case used <= size && open != nil:
				open.To = e.at
				h.classify(open, false)
				out = append(out, *open)
				open = nil
			}
		}
	}
	return out, n
}

// checkElection: one leader at a time (fenced overlaps aside), epochs
// growing with each leadership, observers never going back.
func (h *history) checkElection() ([]Anomaly, map[string]int) {
	out, n := h.checkExclusion("one leader",
		func(x Hold) bool { return x.Prim == "election" }, func(a, b Hold) bool { return true })
	for _, hs := range h.group(func(x Hold) bool { return x.Prim == "election" }) {
		for i := 1; i < len(hs); i++ {
			if a, b := hs[i-1], hs[i]; b.Token <= a.Token {
				an := Anomaly{Check: "one leader", Topo: b.Topo, Name: b.Name, From: b.From, To: b.From,
					Detail: fmt.Sprintf("epoch %d of %s not above %d of the leader before, %s", b.Token, b.Owner, a.Token, a.Owner),
					procs:  []string{a.Proc, b.Proc}, noSync: a.NoSync || b.NoSync}
				h.classify(&an, false)
				out = append(out, an)
			}
		}
	}
	last := map[string]Record{}
	for _, r := range h.recs {
		if r.Op != opObserve || !r.OK {
			continue
		}
		n[r.Topo]++
		if p, ok := last[r.Topo+r.Proc]; ok && r.Token < p.Token {
			an := Anomaly{Check: "one leader", Topo: r.Topo, Name: r.Name, From: p.Start, To: r.Start,
				Detail: fmt.Sprintf("observer %s saw epoch %d after %d", r.Proc, r.Token, p.Token), procs: []string{r.Proc}}
			h.classify(&an, false)
			out = append(out, an)
		}
		last[r.Topo+r.Proc] = r
	}
	return out, n
}
