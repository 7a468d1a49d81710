package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// mean is the cell's mean pair time in nanoseconds, NaN without pairs.
func (c ilCell) mean() float64 {
	if c.n == 0 {
		return math.NaN()
	}
	return float64(c.sum) / float64(c.n)
}

// speedRatio is a's pairs/s over b's, measured in the same part: b's mean
// pair time over a's (above 1: a is faster). Pairs/s would be the same
// for every library here (one pair of each per round), so the ratio is
// of what each library's pairs/s would be at its own pair time.
func speedRatio(a, b ilCell) float64 { return b.mean() / a.mean() }

// partRatios is speedRatio of library a over library b in each part.
func partRatios(cells [ilParts][]ilCell, a, b int) []float64 {
	rs := make([]float64, 0, ilParts)
	for p := range cells {
		rs = append(rs, speedRatio(cells[p][a], cells[p][b]))
	}
	return rs
}

// partDiffs is library a's mean pair time minus library b's, in
// nanoseconds, in each part: what a adds to b's pair, in time. The ratio
// weighs that against the round trip of the moment (the same extra server
// time is a larger share of a short round trip), so the two read together
// tell a library's own cost from the machine's state.
func partDiffs(cells [ilParts][]ilCell, a, b int) []float64 {
	ds := make([]float64, 0, ilParts)
	for p := range cells {
		ds = append(ds, cells[p][a].mean()-cells[p][b].mean())
	}
	return ds
}

// spreadOf is the median of some ratios and their range.
type spreadOf struct {
	med, lo, hi float64
	n           int // ratios that were numbers
}

// medianRange returns the median (of an even count: the mean of the two
// middle ones), min and max of xs, leaving out NaNs (a part in which a
// library completed no pair).
func medianRange(xs []float64) spreadOf {
	v := make([]float64, 0, len(xs))
	for _, x := range xs {
		if !math.IsNaN(x) && !math.IsInf(x, 0) {
			v = append(v, x)
		}
	}
	if len(v) == 0 {
		return spreadOf{med: math.NaN(), lo: math.NaN(), hi: math.NaN()}
	}
	slices.Sort(v)
	m := len(v) / 2
	med := v[m]
	if len(v)%2 == 0 {
		med = (v[m-1] + v[m]) / 2
	}
	return spreadOf{med: med, lo: v[0], hi: v[len(v)-1], n: len(v)}
}

// delta prints a spread of differences in nanoseconds as signed times.
func (s spreadOf) delta() string {
	if s.n == 0 {
		return "-"
	}
	return fmt.Sprintf("%s (%s..%s)", fmtSigned(s.med), fmtSigned(s.lo), fmtSigned(s.hi))
}

func fmtSigned(ns float64) string {
	if ns < 0 {
		return "-" + fmtDur(time.Duration(-ns))
	}
	if ns < 1 {
		return "0"
	}
	return "+" + fmtDur(time.Duration(ns))
}

// durOf is a mean in nanoseconds as a Duration, 0 (printed "-") for NaN.
func durOf(ns float64) time.Duration {
	if math.IsNaN(ns) {
		return 0
	}
	return time.Duration(ns)
}

func (s spreadOf) String() string {
	if s.n == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f (%.2f..%.2f)", s.med, s.lo, s.hi)
}

func printIlHeading(w io.Writer, cfg *config) {
	fmt.Fprintf(w, `Each goroutine does one Lock+Unlock of every library per round, in an order that rotates every round,
each library on its own client, and times each pair: all libraries see the same machine at the same moments.
The window (%v) is split into %d parts. In each part, a library's "/ floor" = the floor's mean pair time over
its own (its pairs/s over the floor's: above 1 = faster than the floor), and "relock / it" = its mean pair time
over relock's (above 1 = relock faster). Shown: the median of the %d parts' ratios (min..max). "mean - floor's":
the same for the difference of the mean pair times (what the library adds to the floor's pair, in time).
mean, p50, p99: pair latency (Lock call to Unlock return) over the whole window. errs: failed Lock or Unlock
(a lock lost before its Unlock is one). Each key belongs to one goroutine, so exclusion holds by construction.
`, cfg.ilDuration, ilParts, ilParts)
}

func printIl(w io.Writer, r *ilResult) {
	fmt.Fprintf(w, "\n%s: %s\n", r.combo.name(), r.combo.title())
	if r.stuck {
		fmt.Fprintf(w, "  STUCK: workers still running %v after the window\n", stuckLimit)
		return
	}
	extra := ""
	if r.gDelta > 0 {
		extra = fmt.Sprintf(", goroutines %+d after", r.gDelta)
	}
	fmt.Fprintf(w, "  %d rounds in %v, viol %d%s\n", r.rounds, r.window.Round(time.Millisecond), r.violations, extra)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  library\tpairs\tmean\tp50\tp99\t/ floor: median (min..max)\tmean - floor's\trelock / it: median (min..max)\terrs\tnotes")
	for i, name := range r.libs {
		var pairs int64
		var all ilCell
		for p := range r.cells {
			pairs += r.cells[p][i].n
			all.n += r.cells[p][i].n
			all.sum += r.cells[p][i].sum
		}
		vsFloor, overFloor, relockVs := "1", "-", "-"
		if i != ilFloor {
			vsFloor = medianRange(partRatios(r.cells, i, ilFloor)).String()
			overFloor = medianRange(partDiffs(r.cells, i, ilFloor)).delta()
		}
		if i != ilRelock {
			relockVs = medianRange(partRatios(r.cells, ilRelock, i)).String()
		}
		note := ""
		if err := r.lastErr[i]; err != nil {
			note = "last error: " + err.Error()
			if len(note) > 90 {
				note = note[:90] + "..."
			}
		}
		fmt.Fprintf(tw, "  %s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\n", name, pairs, fmtDur(durOf(all.mean())),
			fmtDur(pct(r.lat[i], .5)), fmtDur(pct(r.lat[i], .99)), vsFloor, overFloor, relockVs, r.errs[i], strings.TrimSpace(note))
	}
	_ = tw.Flush()
}
