package main

import (
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
	"time"
)

// fmtDur prints a latency with three significant digits or so.
func fmtDur(d time.Duration) string {
	switch {
	case d <= 0:
		return "-"
	case d < 10*time.Microsecond:
		return fmt.Sprintf("%.1fµs", float64(d)/1e3)
	case d < time.Millisecond:
		return fmt.Sprintf("%.0fµs", float64(d)/1e3)
	case d < 10*time.Millisecond:
		return fmt.Sprintf("%.2fms", float64(d)/1e6)
	case d < time.Second:
		return fmt.Sprintf("%.1fms", float64(d)/1e6)
	default:
		return fmt.Sprintf("%.2fs", d.Seconds())
	}
}

func fmtRate(r float64) string {
	if r >= 100 {
		return fmt.Sprintf("%.0f", r)
	}
	return fmt.Sprintf("%.1f", r)
}

func (r *result) totalOps() int64 {
	var n int64
	for _, ro := range r.roles {
		n += ro.ops
	}
	return n
}

func (r *result) rate(ro role) float64 {
	if r.window <= 0 {
		return 0
	}
	return float64(ro.ops) / r.window.Seconds()
}

// cpu returns the CPU of the redis-servers and of this process over the
// window, as a percentage of one core and per operation.
func (r *result) cpu() (srvPct, srvPerOp, cliPct, cliPerOp float64, srvOK bool) {
	if r.window <= 0 {
		return
	}
	srv := r.cpu1.server - r.cpu0.server
	cli := r.cpu1.client - r.cpu0.client
	srvPct = 100 * srv.Seconds() / r.window.Seconds()
	cliPct = 100 * cli.Seconds() / r.window.Seconds()
	if n := r.totalOps(); n > 0 {
		srvPerOp = float64(srv.Microseconds()) / float64(n)
		cliPerOp = float64(cli.Microseconds()) / float64(n)
	}
	return srvPct, srvPerOp, cliPct, cliPerOp, r.cpu0.ok && r.cpu1.ok
}

func spread(lo, hi int64) float64 {
	if lo <= 0 {
		return math.Inf(1)
	}
	return float64(hi) / float64(lo)
}

func printTable(w io.Writer, results []*result) {
	fmt.Fprintln(w, "lat: pair = Lock call to Unlock return; wait = Lock call to acquired. ops/s: pairs/s, or critical sections/s.")
	fmt.Fprintln(w, "CPU: % of one core over the window, and µs of CPU per op (client CPU includes the spun critical sections).")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "scenario\tlibrary\tlat\tops/s\tp50\tp99\tp99.9\tmax\tper-g ops min..max\tviol\terrs\tredis CPU\tµs/op\tclient CPU\tµs/op\tnotes")
	prev := ""
	for _, r := range results {
		scen := rowName(r.scenario, r.at)
		if scen == prev {
			scen = ""
		}
		prev = rowName(r.scenario, r.at)
		if len(r.roles) == 0 {
			fmt.Fprintf(tw, "%s\t%s\t%s\t-\t-\t-\t-\t-\t-\t%d\t-\t-\t-\t-\t-\t%s\n", scen, r.label, r.kind, r.violations, notes(r, role{}))
			continue
		}
		srvPct, srvOp, cliPct, cliOp, ok := r.cpu()
		for i, ro := range r.roles {
			label := r.label
			if ro.name != "" {
				label += " [" + ro.name + "]"
			}
			lo, hi := ro.fairness()
			viol, srv, srvO, cli, cliO := fmt.Sprint(r.violations), "?", "?", fmt.Sprintf("%.0f%%", cliPct), fmt.Sprintf("%.0f", cliOp)
			if ok {
				srv, srvO = fmt.Sprintf("%.0f%%", srvPct), fmt.Sprintf("%.0f", srvOp)
			}
			if i > 0 { // CPU and violations are the row's, printed once
				viol, srv, srvO, cli, cliO = "″", "″", "″", "″", "″"
				scen = ""
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d..%d\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n",
				scen, label, r.kind, fmtRate(r.rate(ro)),
				fmtDur(ro.p(0.50)), fmtDur(ro.p(0.99)), fmtDur(ro.p(0.999)), fmtDur(ro.maxLat()),
				lo, hi, viol, ro.errs, srv, srvO, cli, cliO, notes(r, ro))
		}
	}
	_ = tw.Flush()
}

func notes(r *result, ro role) string {
	var n []string
	if r.stuck {
		n = append(n, fmt.Sprintf("STUCK: workers still running %v after the row", stuckLimit))
	}
	if ro.holdMean > 0 {
		n = append(n, "hold "+fmtDur(ro.holdMean))
		busy := r.rate(ro) * ro.holdMean.Seconds()
		switch {
		case r.permits > 0:
			n = append(n, fmt.Sprintf("permits busy %.0f%%", 100*busy/float64(r.permits)))
		case ro.name == "":
			n = append(n, fmt.Sprintf("lock busy %.0f%%", 100*busy))
		}
	}
	if len(ro.perG) > 1 {
		lo, hi := ro.fairness()
		if s := spread(lo, hi); math.IsInf(s, 1) {
			n = append(n, "spread inf (a goroutine starved)")
		} else {
			n = append(n, fmt.Sprintf("spread %.2fx", s))
		}
	}
	if r.gDelta > 0 {
		n = append(n, fmt.Sprintf("goroutines %+d after the row", r.gDelta))
	}
	if ro.lastErr != nil {
		msg := ro.lastErr.Error()
		if len(msg) > 80 {
			msg = msg[:80] + "..."
		}
		n = append(n, "last error: "+msg)
	}
	return strings.Join(n, ", ")
}

// ---- ratios ----

func find(results []*result, scenario, label string) *result {
	for _, r := range results {
		if r.scenario == scenario && r.label == label && len(r.roles) > 0 {
			return r
		}
	}
	return nil
}

// best returns the row of family in scenario with the most ops/s (the
// best-tuned polling peer).
func best(results []*result, scenario, family string) *result {
	var b *result
	for _, r := range results {
		if r.scenario != scenario || r.family != family || len(r.roles) == 0 {
			continue
		}
		if b == nil || r.rate(r.roles[0]) > b.rate(b.roles[0]) {
			b = r
		}
	}
	return b
}

func ratio(a, b float64) string {
	if b == 0 || a == 0 || math.IsNaN(a) || math.IsNaN(b) {
		return "-"
	}
	return fmt.Sprintf("%.2fx", a/b)
}

func dratio(a, b time.Duration) string { return ratio(float64(a), float64(b)) }

// compare prints relock's row against another: ops/s (above 1: relock does
// more), latencies and CPU per op (below 1: relock is cheaper).
func compare(w io.Writer, rl, other *result, what string) {
	a, b := rl.roles[0], other.roles[0]
	_, aSrv, _, aCli, aok := rl.cpu()
	_, bSrv, _, bCli, bok := other.cpu()
	srv := "-"
	if aok && bok {
		srv = ratio(aSrv, bSrv)
	}
	line := fmt.Sprintf("  relock / %-46s ops/s %-7s p50 %-7s p99 %-7s p99.9 %-7s max %-7s redis µs/op %-7s client µs/op %s",
		what, ratio(rl.rate(a), other.rate(b)), dratio(a.p(.5), b.p(.5)), dratio(a.p(.99), b.p(.99)),
		dratio(a.p(.999), b.p(.999)), dratio(a.maxLat(), b.maxLat()), srv, ratio(aCli, bCli))
	if len(a.perG) > 1 {
		al, ah := a.fairness()
		bl, bh := b.fairness()
		line += fmt.Sprintf("  spread %.2fx vs %.2fx", spread(al, ah), spread(bl, bh))
	}
	fmt.Fprintln(w, line)
}

func printRatios(w io.Writer, results []*result) {
	fmt.Fprintln(w, "\nratios within this run (relock / other: ops/s above 1 = relock does more; latency and CPU per op below 1 = relock is cheaper)")
	var viol, errsN int64
	for _, r := range results {
		viol += r.violations
		for _, ro := range r.roles {
			errsN += ro.errs
		}
	}

	for _, sc := range []string{sc1g, sc64g, scRedlock, scRedlockNew} {
		rl := find(results, sc, libRelock)
		if rl == nil {
			continue
		}
		fmt.Fprintf(w, "%s:\n", sc)
		for _, fam := range []string{libRaw, libRedsync, libRedislock, libRueidis} {
			if o := best(results, sc, fam); o != nil {
				compare(w, rl, o, o.label)
			}
		}
	}

	if rl := find(results, scOneKey, libRelock); rl != nil {
		fmt.Fprintf(w, "%s (latency = wait to acquire; peers that poll at their best-tuned retry delay):\n", scOneKey)
		var top *result
		for _, fam := range []string{libRaw, libRedsync, libRedislock} {
			o := best(results, scOneKey, fam)
			if o == nil {
				continue
			}
			compare(w, rl, o, o.label)
			if fam != libRaw && (top == nil || o.rate(o.roles[0]) > top.rate(top.roles[0])) {
				top = o
			}
		}
		if top != nil {
			compare(w, rl, top, "best polling peer: "+top.label)
		}
		if o := find(results, scOneKey, libRueidis); o != nil {
			compare(w, rl, o, o.label)
		}
	}

	if re := find(results, scReentrant, libRelock); re != nil {
		a := re.roles[0]
		line := fmt.Sprintf("%s: re-entry Lock+Unlock p50 %s", scReentrant, fmtDur(a.p(.5)))
		if o := find(results, sc1g, libRelock); o != nil {
			line += fmt.Sprintf(" = %s relock's fresh pair (%s)", dratio(a.p(.5), o.roles[0].p(.5)), fmtDur(o.roles[0].p(.5)))
		}
		if o := find(results, sc1g, libRaw); o != nil {
			line += fmt.Sprintf(", %s the raw floor (%s)", dratio(a.p(.5), o.roles[0].p(.5)), fmtDur(o.roles[0].p(.5)))
		}
		fmt.Fprintln(w, line)
	}
	if rw := find(results, scRW, libRelock); rw != nil && len(rw.roles) == 2 {
		rd, wr := rw.roles[0], rw.roles[1]
		fmt.Fprintf(w, "%s: %s reads/s + %s writes/s; writer wait p99 %s max %s; reader wait p99 %s max %s; violations %d\n",
			scRW, fmtRate(rw.rate(rd)), fmtRate(rw.rate(wr)), fmtDur(wr.p(.99)), fmtDur(wr.maxLat()),
			fmtDur(rd.p(.99)), fmtDur(rd.maxLat()), rw.violations)
	}
	printSemRatios(w, results)
	fmt.Fprintf(w, "mutual-exclusion violations, all rows: %d; errors, all rows: %d\n", viol, errsN)
}

// printSemRatios prints the semaphore rows against their ceiling and floors.
func printSemRatios(w io.Writer, results []*result) {
	for _, sc := range []string{scSem, scSemSlept} {
		for _, label := range []string{libInProcess, libRaw, libRelock} {
			s := find(results, sc, label)
			if s == nil || len(s.roles) == 0 {
				continue
			}
			a := s.roles[0]
			ceiling := 0.0
			if a.holdMean > 0 {
				ceiling = float64(s.permits) / a.holdMean.Seconds()
			}
			fmt.Fprintf(w, "%s/%s: %s ops/s = %.0f%% of the ceiling %d permits / %s hold = %.0f/s; wait p99 %s max %s; violations %d",
				sc, label, fmtRate(s.rate(a)), 100*s.rate(a)/max(ceiling, 1), s.permits, fmtDur(a.holdMean), ceiling,
				fmtDur(a.p(.99)), fmtDur(a.maxLat()), s.violations)
			if f := find(results, sc, libRaw); label == libRelock && f != nil && len(f.roles) > 0 {
				fmt.Fprintf(w, "; %s the raw floor's ops/s", ratio(s.rate(a), f.rate(f.roles[0])))
			}
			fmt.Fprintln(w)
			// A permit's cycle: its hold, the release that hands it on
			// (a round trip, but for the channel), then the time until
			// the next holder runs.
			if r := s.rate(a); r > 0 && a.relMean > 0 {
				cycle := time.Duration(float64(s.permits) / r * float64(time.Second))
				fmt.Fprintf(w, "  a permit's cycle %s = hold %s + release %s (mean) + %s until the next holder runs\n",
					fmtDur(cycle), fmtDur(a.holdMean), fmtDur(a.relMean), fmtDur(cycle-a.holdMean-a.relMean))
			}
		}
	}
}
