package main

import (
	"fmt"
	"html"
	"math"
	"os"
	"slices"
	"strings"
	"time"
)

// writeReport writes report.html: one self-contained page (inline CSS and
// SVG, no script) with, per topology, the holds' timeline with the fault
// windows and anomalies, latency and throughput over time, and the verdicts.
func writeReport(path string, res *Results, h *history) error {
	var b strings.Builder
	b.WriteString(`<!DOCTYPE html><html><head><meta charset="utf-8"><title>relock chaos report</title><style>
body{font:13px/1.4 system-ui,sans-serif;margin:20px;color:#222;background:#fff}
table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #ccc;padding:2px 6px;text-align:left}
th{background:#eee}.pass{background:#d9f2d9}.expected{background:#fff2c2}.fail{background:#f7c6c6}.na{color:#888}
svg{display:block;margin:6px 0;border:1px solid #ddd;background:#fcfcfc}h2{margin-top:28px;border-bottom:2px solid #444}
.small{font-size:11px;color:#555}</style></head><body>
`)
	verdict := "PASS: no violation"
	if !res.Pass {
		verdict = "FAIL: violations found"
	}
	fmt.Fprintf(&b, "<h1>relock chaos run: seed %d, %s</h1>\n<p><b>%s</b>. %d operations, %d holds, %d faults, %d anomalies; lease %s; faults until %.0fs, then quiet.</p>\n",
		res.Seed, res.Duration, verdict, res.Ops, res.Holds, len(res.Faults), len(res.Anomalies), res.Lease,
		float64(res.QuietAt-res.Start)/1e9)
	fmt.Fprintf(&b, "<p class=small>Replay this schedule: <code>make chaos SEED=%d DURATION=%s</code> (the workers' own timing differs from run to run; the faults do not).</p>\n",
		res.Seed, res.Duration)
	writeVerdicts(&b, res)
	for _, t := range res.Topos {
		fmt.Fprintf(&b, "<h2>topology %s</h2>\n", html.EscapeString(t))
		writeTimeline(&b, res, h, t)
		writeRates(&b, res, h, t)
		writeFaultTable(&b, res, t)
		writeAnomalyTable(&b, res, t)
	}
	b.WriteString("</body></html>\n")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return nil
}

func writeVerdicts(b *strings.Builder, res *Results) {
	b.WriteString("<h2>verdicts</h2><table><tr><th>check</th>")
	for _, t := range res.Topos {
		fmt.Fprintf(b, "<th>%s</th>", html.EscapeString(t))
	}
	b.WriteString("</tr>\n")
	for _, c := range checkNames {
		fmt.Fprintf(b, "<tr><td>%s</td>", c)
		for _, t := range res.Topos {
			for _, v := range res.Verdicts {
				if v.Check == c && v.Topo == t {
					cls := strings.ReplaceAll(v.Verdict, "n/a", "na")
					fmt.Fprintf(b, `<td class="%s" title="%s">%s: %d checked, %d expected, %d violations</td>`,
						cls, html.EscapeString(v.Note), v.Verdict, v.Checked, v.Expected, v.Violated)
				}
			}
		}
		b.WriteString("</tr>\n")
	}
	b.WriteString("</table><p class=small>pass: no anomaly; expected: anomalies, each under a stated limit (see the tables below); fail: at least one violation.</p>\n")
}

// scale maps Unix ns to x pixels.
type scale struct {
	t0, t1 int64
	x0, w  float64
}

func (s scale) x(t int64) float64 {
	t = min(max(t, s.t0), s.t1)
	return s.x0 + s.w*float64(t-s.t0)/float64(s.t1-s.t0)
}

var primColor = map[string]string{"lock": "#4e79a7", "fair": "#59a14f", "rlock": "#76b7b2", "wlock": "#f28e2b",
	"sem": "#b07aa1", "redlock": "#9c755f", "multi": "#edc948", "election": "#e15759"}

// faultBands draws each fault of the topology as a shaded band with its id.
func faultBands(b *strings.Builder, res *Results, t string, sc scale, top, height float64) {
	for _, f := range res.Faults {
		if f.Topo != t {
			continue
		}
		x0, x1 := sc.x(f.At), sc.x(max(f.Until, f.At+int64(100*time.Millisecond)))
		fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s" fill-opacity="0.15"><title>#%d %s</title></rect>`+"\n",
			x0, top, x1-x0, height, faultColor(f.Kind), f.ID, html.EscapeString(f.Fault.String()))
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" font-size="9" fill="#555">#%d</text>`+"\n", x0+1, top+9, f.ID)
	}
}

func faultColor(kind string) string {
	switch kind {
	case fKillServer, fKillWorker:
		return "#d62728"
	case fPartition, fLatency:
		return "#1f77b4"
	case fSentinelFail, fClusterFail, fFailoverSeen:
		return "#9467bd"
	case fClockStep:
		return "#ff7f0e"
	}
	return "#7f7f7f"
}

// axis draws second ticks under a chart.
func axis(b *strings.Builder, res *Results, sc scale, y float64) {
	span := float64(sc.t1-sc.t0) / 1e9
	step := 5.0
	if span > 90 {
		step = 15
	}
	for s := 0.0; s <= span; s += step {
		x := sc.x(sc.t0 + int64(s*1e9))
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#999"/><text x="%.1f" y="%.1f" font-size="10" fill="#333">%.0fs</text>`+"\n",
			x, y, x, y+4, x-6, y+15, s)
	}
	fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#999"/>`+"\n", sc.x0, y, sc.x0+sc.w, y)
}

// rows are the timeline's rows: one per lock name and worker.
func rows(h *history, t string) []string {
	var out []string
	for _, x := range h.holds {
		if x.Topo == t {
			if r := x.Name + " " + workerOf(x.Proc); !slices.Contains(out, r) {
				out = append(out, r)
			}
		}
	}
	slices.Sort(out)
	return out
}

func workerOf(proc string) string {
	w, _, _ := strings.Cut(proc, "#")
	return w
}

// logNorm maps v in [1, top] to [0, 1] on a log scale (below 1 ms: 0).
func logNorm(v, top float64) float64 {
	if v <= 1 || top <= 1 {
		return 0
	}
	return math.Log(v) / math.Log(top)
}

func writeFaultTable(b *strings.Builder, res *Results, t string) {
	b.WriteString("<h3>faults</h3><table><tr><th>#</th><th>kind</th><th>target</th><th>from</th><th>to</th><th>note</th><th>error</th></tr>\n")
	for _, f := range res.Faults {
		if f.Topo != t {
			continue
		}
		target := f.Target
		if f.Server != "" {
			target += " ↔ " + f.Server
		}
		if f.Mode != "" {
			target += " " + f.Mode
		}
		if f.Amount != 0 {
			target += " " + f.Amount.String()
		}
		fmt.Fprintf(b, "<tr><td>%d</td><td>%s</td><td>%s</td><td>%.1fs</td><td>%.1fs</td><td>%s</td><td>%s</td></tr>\n",
			f.ID, f.Kind, html.EscapeString(target), float64(f.At-res.Start)/1e9, float64(f.Until-res.Start)/1e9,
			html.EscapeString(f.Note), html.EscapeString(f.Err))
	}
	b.WriteString("</table>\n")
}

// maxAnomalyRows bounds the anomaly table; results.json has them all.
const maxAnomalyRows = 300

func writeAnomalyTable(b *strings.Builder, res *Results, t string) {
	b.WriteString("<h3>anomalies</h3><table><tr><th>at</th><th>check</th><th>lock</th><th>class</th><th>what</th><th>limit</th><th>faults</th></tr>\n")
	rows := 0
	for _, a := range res.Anomalies {
		if a.Topo != t {
			continue
		}
		if rows++; rows > maxAnomalyRows {
			continue
		}
		cls := "expected"
		if a.Class == "violation" {
			cls = "fail"
		}
		fmt.Fprintf(b, "<tr class=%s><td>%.2fs</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%v</td></tr>\n",
			cls, float64(a.From-res.Start)/1e9, a.Check, html.EscapeString(a.Name), a.Class,
			html.EscapeString(a.Detail), html.EscapeString(a.Limit), a.Faults)
	}
	b.WriteString("</table>\n")
	if rows > maxAnomalyRows {
		fmt.Fprintf(b, "<p class=small>%d more in results.json</p>\n", rows-maxAnomalyRows)
	}
	if rows == 0 {
		b.WriteString("<p class=small>none</p>\n")
	}
}
