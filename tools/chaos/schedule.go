package main

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"time"
)

// Fault kinds.
const (
	fPauseServer  = "pause-server"      // SIGSTOP, then SIGCONT
	fKillServer   = "kill-server"       // SIGKILL, then start again (data kept only with AOF)
	fSentinelFail = "sentinel-failover" // SENTINEL FAILOVER
	fClusterFail  = "cluster-failover"  // CLUSTER FAILOVER on a replica
	fPartition    = "partition"         // a worker's link to a server: proxy down or timeout toxic
	fLatency      = "latency"           // a worker's links to its topology's servers slowed
	fClientPause  = "client-pause"      // CLIENT PAUSE on a server
	fStopWorker   = "stop-worker"       // SIGSTOP a worker past its lease, then SIGCONT
	fKillWorker   = "kill-worker"       // SIGKILL a worker, then start a new incarnation
	fBusyScript   = "busy-script"       // a long EVAL, then SCRIPT KILL
	fClockStep    = "clock-step"        // a server's clock stepped by an offset, then back
)

// Fault is one entry of the schedule: what, on what, from when to when
// (offsets from the start of the run).
type Fault struct {
	ID     int           `json:"id"`
	Kind   string        `json:"kind"`
	Topo   string        `json:"topo"`
	Target string        `json:"target"`          // server id ("sentinel/m0"), "master", or worker id
	Server string        `json:"server,omitzero"` // a link's server end (partition)
	Mode   string        `json:"mode,omitzero"`   // partition: down|timeout; client-pause: WRITE|ALL
	Amount time.Duration `json:"amount,omitzero"` // latency, or clock offset
	Start  time.Duration `json:"start"`
	End    time.Duration `json:"end"`
}

func (f Fault) String() string {
	s := fmt.Sprintf("#%-3d %6.1fs..%6.1fs %-17s %-8s %s", f.ID, f.Start.Seconds(), f.End.Seconds(), f.Kind, f.Topo, f.Target)
	if f.Server != "" {
		s += " <-> " + f.Server
	}
	if f.Mode != "" {
		s += " " + f.Mode
	}
	if f.Amount != 0 {
		s += " " + f.Amount.String()
	}
	return s
}

// layout is what the schedule is drawn over: known before any process
// starts, so that the schedule depends on the seed and the flags alone.
type layout struct {
	Topos   []string
	Workers int // per topology
	Lease   time.Duration
	Clock   bool     // the clock shim is in use
	Only    []string // when set, the fault kinds drawn from (a narrower run)
}

func (l layout) servers(topo string) []string {
	switch topo {
	case "sentinel":
		return []string{"sentinel/m0", "sentinel/m1", "sentinel/s0", "sentinel/s1", "sentinel/s2"}
	case "redlock":
		return []string{"redlock/m0", "redlock/m1", "redlock/m2", "redlock/m3", "redlock/m4"}
	case "cluster":
		return []string{"cluster/n0", "cluster/n1", "cluster/n2", "cluster/n3", "cluster/n4", "cluster/n5"}
	}
	return nil
}

// dataServers are the servers clients talk to (no Sentinels).
func (l layout) dataServers(topo string) []string {
	return slices.DeleteFunc(l.servers(topo), func(s string) bool { return s[len(topo)+1] == 's' })
}

func workerID(topo string, i int) string { return fmt.Sprintf("%s/w%d", topo, i) }

// kinds a topology draws from, with weights.
func (l layout) kinds(topo string) []string {
	ks := []string{fPauseServer, fPauseServer, fKillServer, fKillServer, fPartition, fPartition,
		fLatency, fClientPause, fStopWorker, fStopWorker, fKillWorker, fBusyScript}
	switch topo {
	case "sentinel":
		ks = append(ks, fSentinelFail, fSentinelFail)
	case "cluster":
		ks = append(ks, fClusterFail, fClusterFail)
	}
	if l.Clock {
		ks = append(ks, fClockStep)
	}
	if len(l.Only) > 0 {
		ks = slices.DeleteFunc(ks, func(k string) bool { return !slices.Contains(l.Only, k) })
	}
	return ks
}

// serverLevel faults act on a topology's servers; at most one runs per
// topology at a time, so that two of them do not take a quorum down
// together by chance (faults of workers and links overlap freely).
func serverLevel(kind string) bool {
	switch kind {
	case fPartition, fLatency, fStopWorker, fKillWorker:
		return false
	}
	return true
}

// makeSchedule draws the faults of a run of length total from seed: faults
// start in [warmup, quiet) and end before quiet; the rest of the run is
// quiet, for the liveness check.
func makeSchedule(seed uint64, l layout, warmup, quiet time.Duration) []Fault {
	rng := rand.New(rand.NewPCG(seed, 0x6368616f73)) // "chaos"
	between := func(lo, hi time.Duration) time.Duration { return lo + time.Duration(rng.Int64N(int64(hi-lo)+1)) }
	var out []Fault
	for t := warmup; ; {
		t += between(300*time.Millisecond, 1500*time.Millisecond)
		if t >= quiet {
			break
		}
		topo := l.Topos[rng.IntN(len(l.Topos))]
		ks := l.kinds(topo)
		if len(ks) == 0 {
			continue
		}
		f := l.draw(rng, between, topo, ks[rng.IntN(len(ks))])
		f.Start, f.End = t, t+f.End
		if f.End > quiet || conflicts(out, f) { // a fault cut short would not be the one drawn
			continue
		}
		f.ID = len(out) + 1
		out = append(out, f)
	}
	return out
}

// draw fills a fault of kind on topo; its End is a length until makeSchedule
// places it.
func (l layout) draw(rng *rand.Rand, between func(lo, hi time.Duration) time.Duration, topo, kind string) Fault {
	pick := func(xs []string) string { return xs[rng.IntN(len(xs))] }
	w := workerID(topo, rng.IntN(l.Workers))
	f := Fault{Kind: kind, Topo: topo}
	switch kind {
	case fPauseServer, fKillServer:
		f.Target, f.End = pick(l.servers(topo)), between(time.Second, 4*time.Second)
	case fSentinelFail, fClusterFail:
		f.Target, f.End = "master", 3*time.Second
		if kind == fClusterFail {
			f.Target = pick(l.dataServers(topo)[3:]) // the replicas, as formed
		}
	case fPartition:
		f.Target, f.Server, f.End = w, pick(l.dataServers(topo)), between(time.Second, 5*time.Second)
		f.Mode = pick([]string{"down", "timeout"})
	case fLatency:
		f.Target, f.End, f.Amount = w, between(2*time.Second, 6*time.Second),
			between(50*time.Millisecond, 300*time.Millisecond).Truncate(time.Millisecond)
	case fClientPause:
		f.Target, f.End, f.Mode = pick(l.dataServers(topo)), between(500*time.Millisecond, 2500*time.Millisecond),
			pick([]string{"WRITE", "ALL"})
	case fStopWorker:
		f.Target, f.End = w, between(l.Lease*3/2, l.Lease*3)
	case fKillWorker:
		f.Target, f.End = w, between(500*time.Millisecond, 2*time.Second)
	case fBusyScript:
		f.Target, f.End = pick(l.dataServers(topo)), between(500*time.Millisecond, 3*time.Second)
	case fClockStep:
		f.Target, f.End = pick(l.dataServers(topo)), between(2*time.Second, 5*time.Second)
		f.Amount = between(l.Lease, 2*l.Lease).Truncate(time.Millisecond)
		if rng.IntN(2) == 0 {
			f.Amount = -f.Amount
		}
	}
	return f
}

// conflicts reports whether f overlaps a fault on the same target, or a
// server-level fault of its topology when it is one.
func conflicts(sched []Fault, f Fault) bool {
	for _, g := range sched {
		if g.End <= f.Start || f.End <= g.Start {
			continue
		}
		if g.Topo == f.Topo && (g.Target == f.Target || serverLevel(g.Kind) && serverLevel(f.Kind)) {
			return true
		}
	}
	return false
}
