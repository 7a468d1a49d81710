package main

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Hold is one acquisition's hold, rebuilt from the history: from the
// acquire's reply to the release's call, or to the moment the loss was
// signalled, or to the end of its process (killed, or stopped at the end).
type Hold struct {
	Topo, Proc, Prim, Name, Owner string
	Token, Weight, Size           int64
	From, To                      int64
	Ended                         string // release, lost, exit
	NoSync                        bool   // taken with replica sync off
}

func (h Hold) String() string {
	t := ""
	if h.Token != 0 {
		t = fmt.Sprintf(" token %d", h.Token)
	}
	return fmt.Sprintf("%s %s%s", h.Owner, h.Prim, t)
}

// Anomaly is what a checker found, classified.
type Anomaly struct {
	Check  string `json:"check"`
	Topo   string `json:"topo"`
	Name   string `json:"name"`
	From   int64  `json:"from"`
	To     int64  `json:"to"`
	Detail string `json:"detail"`
	Class  string `json:"class"`           // violation or expected
	Limit  string `json:"limit,omitempty"` // the stated limit it is expected under
	Faults []int  `json:"faults,omitempty"`
	procs  []string
	noSync bool // a hold involved was taken with replica sync off
}

// Verdict is one checker's result on one topology.
type Verdict struct {
	Check    string `json:"check"`
	Topo     string `json:"topo"`
	Checked  int    `json:"checked"` // holds, pairs, writes... that it looked at
	Verdict  string `json:"verdict"` // pass, expected (only expected anomalies), fail
	Expected int    `json:"expected"`
	Violated int    `json:"violations"`
	Note     string `json:"note,omitempty"`
}

// history is what the checkers read.
type history struct {
	recs    []Record
	holds   []Hold
	faults  []FaultEvent
	incEnds map[string]int64
	stopAt  int64 // when the workers were told to stop
	quietAt int64 // when the last fault had ended (by the schedule)
	lease   time.Duration
}

func newHistory(recs []Record, faults []FaultEvent, ends []IncEnd, stopAt, quietAt int64, lease time.Duration) *history {
	h := &history{recs: recs, faults: faults, incEnds: map[string]int64{}, stopAt: stopAt,
		quietAt: quietAt, lease: lease}
	for _, e := range ends {
		h.incEnds[e.Proc] = e.At
	}
	h.holds = buildHolds(recs, h.incEnds, stopAt)
	return h
}

// buildHolds pairs each successful acquire with the end of its hold.
func buildHolds(recs []Record, incEnds map[string]int64, stopAt int64) []Hold {
	ends := map[string]Record{}
	for _, r := range recs {
		if r.Op == opRelease || r.Op == opReleasing || r.Op == opLost {
			k := r.Topo + "|" + r.Owner
			if e, ok := ends[k]; !ok || r.Start < e.Start {
				ends[k] = r
			}
		}
	}
	var out []Hold
	for _, r := range recs {
		if r.Op != opAcquire || !r.OK {
			continue
		}
		h := Hold{Topo: r.Topo, Proc: r.Proc, Prim: r.Prim, Name: r.Name, Owner: r.Owner,
			Token: r.Token, Weight: r.Weight, Size: r.Size, From: r.End, NoSync: r.NoSync}
		if e, ok := ends[r.Topo+"|"+r.Owner]; ok {
			h.To, h.Ended = e.Start, e.Op
		} else if at, ok := incEnds[r.Proc]; ok {
			h.To, h.Ended = at, "exit"
		} else {
			h.To, h.Ended = stopAt, "exit"
		}
		h.To = max(h.To, h.From)
		out = append(out, h)
	}
	slices.SortFunc(out, func(a, b Hold) int { return cmp64(a.From, b.From) })
	return out
}

func cmp64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// classify names the stated limit an anomaly is expected under, from the
// faults whose windows (stretched by two leases, as a fault's effects
// outlive it: a lease taken before it, a restarted server) overlap it and
// act on its topology or on one of its processes. Without one it is a
// violation.
func (h *history) classify(a *Anomaly, fenced bool) {
	grace := int64(2 * h.lease)
	var limits []string
	for _, f := range h.faults {
		from := f.At
		if f.Kind == fFailoverSeen {
			// The role poll sees a failover after the promotion, which is
			// when the old master's writes start to be thrown away: the
			// window opens a lease before the sighting.
			from -= int64(h.lease)
		}
		if from > a.To || f.Until+grace < a.From || f.Topo != a.Topo {
			continue
		}
		a.Faults = append(a.Faults, f.ID)
		if l := h.limitOf(f, a); l != "" && !slices.Contains(limits, l) {
			limits = append(limits, l)
		}
	}
	slices.Sort(limits)
	a.Class, a.Limit = "violation", ""
	// Fencing makes an overlap harmless to a store that checks tokens, but
	// only a stated limit (the server lost data) explains it: fenced alone
	// is still a violation of mutual exclusion.
	const fencedNote = "fenced: the later hold has the larger token, so a store that checks tokens refuses the older holder's writes"
	switch {
	case len(limits) > 0 && fenced:
		a.Class, a.Limit = "expected", strings.Join(limits, "; ")+"; "+fencedNote
	case len(limits) > 0:
		a.Class, a.Limit = "expected", strings.Join(limits, "; ")
	case fenced:
		a.Detail += " (" + fencedNote + ", but no stated limit explains the overlap)"
	}
}

// limitOf is the stated limit fault f puts the anomaly under, or "".
func (h *history) limitOf(f FaultEvent, a *Anomaly) string {
	// With replica sync on, an acquisition no replica acknowledged is
	// undone, so only a hold taken with it off may be lost in a failover.
	failover := ""
	if a.noSync {
		failover = "failover with replica sync off: the promoted replica may not have the hold"
	}
	switch f.Kind {
	case fKillServer:
		// A master (or a server whose role could not be read) of data,
		// not a Sentinel or a replica, whose keys are then lost.
		if !strings.Contains(f.Target, "/s") && !strings.Contains(f.Note, "AOF fsync") && !strings.HasPrefix(f.Note, "replica") {
			return "server killed without AOF: its keys are lost with it"
		}
	case fFailoverSeen:
		// Whatever caused it: the schedule's failover, or a master
		// paused, killed or CLIENT PAUSEd past the failure detection.
		return failover
	case fClockStep:
		if !strings.HasPrefix(f.Note, "replica") { // a replica's clock expires nothing
			return "clock step: a server's clock stepped moves its leases' expiry"
		}
	case fStopWorker:
		for _, p := range a.procs {
			if strings.HasPrefix(p, f.Target+"#") {
				return "holder paused past its lease: it is told of the loss only when it runs again"
			}
		}
	}
	return ""
}
