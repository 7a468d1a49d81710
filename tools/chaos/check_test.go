package main

import (
	"strings"
	"testing"
	"time"
)

const ms = int64(time.Millisecond)

// acq, rel and lost build a hand-made history: times in ms.
func acq(proc, prim, name, owner string, token int64, start, end int64) Record {
	return Record{Topo: "t", Proc: proc, Prim: prim, Name: name, Owner: owner, Op: opAcquire,
		Token: token, Start: start * ms, End: end * ms, OK: true}
}

func endOf(r Record, op string, at int64) Record {
	e := r
	e.Op, e.Start, e.End = op, at*ms, at*ms
	return e
}

func hist(recs []Record, faults ...FaultEvent) *history {
	return newHistory(recs, faults, nil, 100_000*ms, 90_000*ms, 2*time.Second)
}

func TestMutexOverlapFound(t *testing.T) {
	a := acq("w0#0", "lock", "L", "a", 0, 0, 10)
	b := acq("w1#0", "lock", "L", "b", 0, 50, 60)
	h := hist([]Record{a, endOf(a, opRelease, 100), b, endOf(b, opRelease, 120)})
	as, n := h.checkMutex()
	if n["t"] != 2 || len(as) != 1 {
		t.Fatalf("checked %v, anomalies %+v; want 2 holds, 1 anomaly", n, as)
	}
	if as[0].Class != "violation" || as[0].From != 60*ms || as[0].To != 100*ms {
		t.Errorf("anomaly %+v: want a violation from 60 ms to 100 ms", as[0])
	}
}

func TestMutexHandOverIsNoOverlap(t *testing.T) {
	a := acq("w0#0", "lock", "L", "a", 1, 0, 10)
	b := acq("w1#0", "lock", "L", "b", 2, 20, 100) // replied after a's release began
	h := hist([]Record{a, endOf(a, opRelease, 100), b, endOf(b, opRelease, 150)})
	if as, _ := h.checkMutex(); len(as) != 0 {
		t.Errorf("anomalies %+v for holds that only touch", as)
	}
}

func TestFencedOverlapClassified(t *testing.T) {
	a := acq("w0#0", "lock", "L", "a", 5, 0, 10)
	b := acq("w1#0", "lock", "L", "b", 7, 50, 60)
	// Fenced, but with no fault to explain it: still a violation.
	h := hist([]Record{a, endOf(a, opLost, 100), b, endOf(b, opRelease, 120)})
	as, _ := h.checkMutex()
	if len(as) != 1 || as[0].Class != "violation" || !strings.Contains(as[0].Detail, "fenced") {
		t.Fatalf("anomalies %+v: want one fenced violation", as)
	}
	// Under a stated limit, fenced is noted with it.
	kill := FaultEvent{Fault: Fault{ID: 4, Kind: fKillServer, Topo: "t", Target: "t/m0"}, At: 20 * ms, Until: 40 * ms, Note: "master, no AOF"}
	h = hist([]Record{a, endOf(a, opLost, 100), b, endOf(b, opRelease, 120)}, kill)
	as, _ = h.checkMutex()
	if len(as) != 1 || as[0].Class != "expected" || !strings.Contains(as[0].Limit, "without AOF") || !strings.Contains(as[0].Limit, "fenced") {
		t.Fatalf("anomalies %+v: want one expected overlap, fenced", as)
	}
	// The later hold with the smaller token is not fenced.
	b.Token = 3
	h = hist([]Record{a, endOf(a, opLost, 100), b, endOf(b, opRelease, 120)})
	if as, _ := h.checkMutex(); len(as) != 1 || as[0].Class != "violation" || strings.Contains(as[0].Detail, "fenced") {
		t.Fatalf("anomalies %+v: want one violation, not fenced", as)
	}
}

func TestOverlapUnderKillWithoutAOFIsExpected(t *testing.T) {
	a := acq("w0#0", "lock", "L", "a", 0, 0, 10)
	b := acq("w1#0", "lock", "L", "b", 0, 50, 60)
	kill := FaultEvent{Fault: Fault{ID: 4, Kind: fKillServer, Topo: "t", Target: "t/m0"}, At: 20 * ms, Until: 40 * ms, Note: "master, no AOF"}
	h := hist([]Record{a, endOf(a, opRelease, 100), b, endOf(b, opRelease, 120)}, kill)
	as, _ := h.checkMutex()
	if len(as) != 1 || as[0].Class != "expected" || !strings.Contains(as[0].Limit, "without AOF") ||
		len(as[0].Faults) != 1 || as[0].Faults[0] != 4 {
		t.Fatalf("anomalies %+v: want one expected under the AOF limit, fault #4", as)
	}
}

func TestKilledIncarnationHoldEndsAtExit(t *testing.T) {
	a := acq("w0#0", "lock", "L", "a", 0, 0, 10)
	b := acq("w1#0", "lock", "L", "b", 0, 50, 60)
	h := newHistory([]Record{a, b, endOf(b, opRelease, 120)}, nil,
		[]IncEnd{{Proc: "w0#0", At: 40 * ms}}, 1000*ms, 900*ms, 2*time.Second)
	if as, _ := h.checkMutex(); len(as) != 0 {
		t.Fatalf("anomalies %+v: a's hold ended when its process was killed", as)
	}
	if h.holds[0].Ended != "exit" || h.holds[0].To != 40*ms {
		t.Errorf("hold %+v: want it ended by exit at 40 ms", h.holds[0])
	}
}

// A worker killed while its release was in flight leaves the releasing
// record alone: the hold ends there (the release may have run), not at
// the exit.
func TestReleaseInFlightAtAKillEndsTheHold(t *testing.T) {
	a := acq("w0#0", "rlock", "R", "a", 0, 0, 10)
	w := acq("w1#0", "wlock", "R", "w", 0, 50, 60)
	h := newHistory([]Record{a, endOf(a, opReleasing, 30), w, endOf(w, opRelease, 120)}, nil,
		[]IncEnd{{Proc: "w0#0", At: 700 * ms}}, 1000*ms, 900*ms, 2*time.Second)
	if as, _ := h.checkRW(); len(as) != 0 {
		t.Fatalf("anomalies %+v: a's release was called before the writer got in", as)
	}
	if h.holds[0].To != 30*ms {
		t.Errorf("hold %+v: want it ended at its release's call, 30 ms", h.holds[0])
	}
}

func semHold(proc, owner string, w, start, end int64) []Record {
	r := acq(proc, "sem", "S", owner, 0, start, start)
	r.Weight, r.Size = w, 3
	return []Record{r, endOf(r, opRelease, end)}
}

func TestSemaphoreOverBoundFound(t *testing.T) {
	var recs []Record
	recs = append(recs, semHold("w0#0", "a", 2, 0, 100)...)
	recs = append(recs, semHold("w1#0", "b", 1, 10, 100)...) // 3 of 3: fine
	recs = append(recs, semHold("w2#0", "c", 1, 50, 70)...)  // 4 of 3
	recs = append(recs, semHold("w2#0", "d", 1, 100, 200)...)
	as, n := hist(recs).checkSemaphore()
	if n["t"] != 4 || len(as) != 1 {
		t.Fatalf("checked %v, anomalies %+v; want 4 permits, 1 anomaly", n, as)
	}
	if a := as[0]; a.From != 50*ms || a.To != 70*ms || !strings.HasPrefix(a.Detail, "4 of 3") || a.Class != "violation" {
		t.Errorf("anomaly %+v: want 4 of 3 from 50 to 70 ms, a violation", a)
	}
}

func TestReadersShareWritersExclude(t *testing.T) {
	r1 := acq("w0#0", "rlock", "RW", "r1", 0, 0, 10)
	r2 := acq("w1#0", "rlock", "RW", "r2", 0, 20, 30)
	w := acq("w2#0", "wlock", "RW", "w", 0, 40, 50)
	h := hist([]Record{r1, endOf(r1, opRelease, 100), r2, endOf(r2, opRelease, 45), w, endOf(w, opRelease, 200)})
	as, _ := h.checkRW()
	if len(as) != 1 || !strings.Contains(as[0].Detail, "w ") {
		t.Fatalf("anomalies %+v: want only the writer's overlap with r1", as)
	}
}

func TestTokenMonotonicity(t *testing.T) {
	a := acq("w0#0", "lock", "L", "a", 10, 0, 10)
	b := acq("w1#0", "lock", "L", "b", 9, 20, 30) // began after a's reply, smaller token
	c := acq("w2#0", "lock", "L", "c", 8, 5, 40)  // concurrent with a: no order
	as, n := hist([]Record{a, b, c}).checkTokens()
	if n["t"] != 3 || len(as) != 1 || !strings.Contains(as[0].Detail, "b got token 9") {
		t.Fatalf("checked %v, anomalies %+v; want b's token flagged", n, as)
	}
}

func TestLivenessAfterFaults(t *testing.T) {
	late := acq("w0#0", "fair", "L", "a", 0, 95_000, 96_000) // quiet at 90 s, settled at 94 s
	late.OK, late.Err = false, "context deadline exceeded"
	fine := acq("w1#0", "lock", "L", "b", 1, 95_000, 95_010)
	early := acq("w2#0", "lock", "L", "c", 0, 91_000, 92_000) // before the settle time
	early.OK = false
	as, n := hist([]Record{late, fine, early}).checkLiveness()
	if n["t"] != 2 || len(as) != 1 || as[0].Class != "violation" {
		t.Fatalf("checked %v, anomalies %+v; want a's failure alone", n, as)
	}
}

func TestElectionEpochsAndObservers(t *testing.T) {
	a := acq("w0#0", "election", "E", "a", 5, 0, 10)
	b := acq("w1#0", "election", "E", "b", 4, 30, 40) // after a resigned, smaller epoch
	o1 := Record{Topo: "t", Proc: "w2#0", Prim: "observe", Name: "E", Op: opObserve, Token: 5, Start: 15 * ms, OK: true}
	o2 := o1
	o2.Token, o2.Start = 4, 45*ms
	h := hist([]Record{a, endOf(a, opRelease, 20), b, endOf(b, opRelease, 50), o1, o2})
	as, _ := h.checkElection()
	if len(as) != 2 {
		t.Fatalf("anomalies %+v: want the epoch going back, for the leaders and the observer", as)
	}
}

// An epoch that goes back after a failover is under the failover's limit
// when a leader involved was elected with replica sync off, as an
// overlap is; with sync on for both, it is a violation.
func TestElectionEpochBackAfterFailoverWithoutSync(t *testing.T) {
	fo := FaultEvent{Fault: Fault{ID: 2, Kind: fFailoverSeen, Topo: "t", Target: "t/m1"}, At: 25 * ms, Until: 25 * ms}
	for _, noSync := range []bool{false, true} {
		a := acq("w0#0", "election", "E", "a", 5, 0, 10)
		b := acq("w1#0", "election", "E", "b", 4, 30, 40)
		a.NoSync = noSync
		as, _ := hist([]Record{a, endOf(a, opRelease, 20), b, endOf(b, opRelease, 50)}, fo).checkElection()
		want := "violation"
		if noSync {
			want = "expected"
		}
		if len(as) != 1 || as[0].Class != want {
			t.Errorf("leader before with replica sync off %v: anomalies %+v, want one %s", noSync, as, want)
		}
	}
}

func TestVerdicts(t *testing.T) {
	a := acq("w0#0", "lock", "L", "a", 0, 0, 10)
	b := acq("w1#0", "lock", "L", "b", 0, 50, 60)
	h := hist([]Record{a, endOf(a, opRelease, 100), b, endOf(b, opRelease, 120)})
	vs, as := h.runChecks([]string{"t"}, []KeyLeft{{Topo: "t", Server: "t/m0", Key: "lock-0"}})
	got := map[string]string{}
	for _, v := range vs {
		got[v.Check] = v.Verdict
	}
	want := map[string]string{"mutual exclusion": "fail", "keyspace drained": "fail", "semaphore bound": "n/a",
		"token monotonicity": "n/a"}
	for c, w := range want {
		if got[c] != w {
			t.Errorf("%s: verdict %q, want %q", c, got[c], w)
		}
	}
	if len(as) != 2 {
		t.Errorf("anomalies %+v: want the overlap and the key", as)
	}
}

func TestFailoverIsALimitOnlyWithoutReplicaSync(t *testing.T) {
	fo := FaultEvent{Fault: Fault{ID: 2, Kind: fFailoverSeen, Topo: "t", Target: "t/m1"}, At: 40 * ms, Until: 40 * ms}
	for _, noSync := range []bool{false, true} {
		a := acq("w0#0", "lock", "L", "a", 0, 0, 10)
		b := acq("w1#0", "lock", "L", "b", 0, 50, 60)
		a.NoSync = noSync
		as, _ := hist([]Record{a, endOf(a, opRelease, 100), b, endOf(b, opRelease, 120)}, fo).checkMutex()
		want := "violation"
		if noSync {
			want = "expected"
		}
		if len(as) != 1 || as[0].Class != want || len(as[0].Faults) != 1 {
			t.Errorf("replica sync off %v: anomalies %+v, want one %s attributed to fault #2", noSync, as, want)
		}
	}
	// Seen just after the overlap (the role poll lags the promotion), the
	// failover still explains a hold taken with sync off; seen more than
	// a lease after, it does not.
	for _, seen := range []int64{150, 2_200} {
		late := FaultEvent{Fault: Fault{ID: 3, Kind: fFailoverSeen, Topo: "t", Target: "t/m1"}, At: seen * ms, Until: seen * ms}
		a := acq("w0#0", "lock", "L", "a", 0, 0, 10)
		b := acq("w1#0", "lock", "L", "b", 0, 50, 60)
		a.NoSync = true
		as, _ := hist([]Record{a, endOf(a, opRelease, 100), b, endOf(b, opRelease, 120)}, late).checkMutex()
		want := "expected"
		if seen > 2_000+100 {
			want = "violation"
		}
		if len(as) != 1 || as[0].Class != want {
			t.Errorf("failover seen at %d ms: anomalies %+v, want one %s", seen, as, want)
		}
	}
}

func TestOlderReaderIsNotFenced(t *testing.T) {
	r := acq("w0#0", "rlock", "RW", "r", 5, 0, 10)
	w := acq("w1#0", "wlock", "RW", "w", 7, 50, 60)
	as, _ := hist([]Record{r, endOf(r, opLost, 100), w, endOf(w, opRelease, 120)}).checkRW()
	if len(as) != 1 || as[0].Class != "violation" {
		t.Fatalf("anomalies %+v: a reader overlapping a later writer is a violation, whatever the tokens", as)
	}
}

func TestLivenessOfAnUnfairLockIsALimit(t *testing.T) {
	late := acq("w0#0", "lock", "L", "a", 0, 95_000, 96_000)
	late.OK, late.Err = false, "context deadline exceeded"
	as, _ := hist([]Record{late}).checkLiveness()
	if len(as) != 1 || as[0].Class != "expected" || !strings.HasPrefix(as[0].Limit, "not fair") {
		t.Fatalf("anomalies %+v: a plain lock's starved waiter is expected under the fairness limit", as)
	}
}

func TestReplicaKilledWithoutAOFIsNoLimit(t *testing.T) {
	a := acq("w0#0", "lock", "L", "a", 0, 0, 10)
	b := acq("w1#0", "lock", "L", "b", 0, 50, 60)
	kill := FaultEvent{Fault: Fault{ID: 4, Kind: fKillServer, Topo: "t", Target: "t/m1"}, At: 20 * ms, Until: 40 * ms,
		Note: "replica, no AOF"}
	as, _ := hist([]Record{a, endOf(a, opRelease, 100), b, endOf(b, opRelease, 120)}, kill).checkMutex()
	if len(as) != 1 || as[0].Class != "violation" || len(as[0].Faults) != 1 {
		t.Fatalf("anomalies %+v: a replica killed without AOF explains nothing", as)
	}
}

// A process that keeps asking for a plain lock and is not served for
// several liveness bounds is not explained by unfairness: its wake-ups
// are lost.
func TestProcessStarvedOnUnfairLockIsAViolation(t *testing.T) {
	var recs []Record
	for i := int64(0); i < 5; i++ { // 5 waits of 10 s from 94 s, none served
		r := acq("w0#0", "lock", "L", "a", 0, 94_000+i*10_000, 104_000+i*10_000)
		r.OK, r.Err = false, "context deadline exceeded"
		recs = append(recs, r)
	}
	h := newHistory(recs, nil, nil, 200_000*ms, 90_000*ms, 2*time.Second)
	as, _ := h.checkLiveness()
	if len(as) != 5 {
		t.Fatalf("anomalies %+v; want one per wait", as)
	}
	for i, a := range as {
		starved := i == 4 // 50 s unserved; the bound is 4 × 12 s
		if (a.Class == "violation") != starved {
			t.Errorf("wait %d: class %q (%s); want a violation only past 48 s unserved", i, a.Class, a.Detail)
		}
	}
}
