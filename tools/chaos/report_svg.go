package main

import (
	"fmt"
	"html"
	"slices"
	"strings"
	"time"
)

const (
	chartW  = 1300.0
	labelW  = 170.0
	rowH    = 14.0
	plotTop = 16.0
)

func (res *Results) scale() scale {
	return scale{t0: res.Start, t1: max(res.StopAt, res.Start+1), x0: labelW, w: chartW - labelW - 10}
}

// writeTimeline draws every hold as a bar in its row (lock name and
// worker), coloured by primitive; lost holds end in a black tick, holds
// cut by their process's end in a red one; anomalies are red outlines.
func writeTimeline(b *strings.Builder, res *Results, h *history, t string) {
	rs := rows(h, t)
	sc := res.scale()
	height := plotTop + rowH*float64(len(rs)) + 24
	fmt.Fprintf(b, "<h3>holds per lock and worker</h3>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\">\n", chartW, height)
	faultBands(b, res, t, sc, 0, height-24)
	idx := map[string]int{}
	for i, r := range rs {
		idx[r] = i
		y := plotTop + rowH*float64(i)
		fmt.Fprintf(b, `<text x="4" y="%.1f" font-size="10">%s</text><line x1="%.0f" y1="%.1f" x2="%.0f" y2="%.1f" stroke="#eee"/>`+"\n",
			y+10, html.EscapeString(r), labelW, y+rowH, chartW-10, y+rowH)
	}
	for _, x := range h.holds {
		if x.Topo != t {
			continue
		}
		y := plotTop + rowH*float64(idx[x.Name+" "+workerOf(x.Proc)]) + 2
		x0, x1 := sc.x(x.From), sc.x(x.To)
		fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.0f" fill="%s"><title>%s %s %.0f ms, ended by %s</title></rect>`+"\n",
			x0, y, max(x1-x0, 0.8), rowH-4, primColor[x.Prim], html.EscapeString(x.String()), x.Name,
			float64(x.To-x.From)/1e6, x.Ended)
		if x.Ended != "release" {
			color := "#000"
			if x.Ended == "exit" {
				color = "#d00"
			}
			fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="2"/>`+"\n", x1, y-1, x1, y+rowH-3, color)
		}
	}
	for _, a := range res.Anomalies {
		if a.Topo != t {
			continue
		}
		x0, x1 := sc.x(a.From), sc.x(max(a.To, a.From))
		color := "#e00"
		if a.Class != "violation" {
			color = "#e90"
		}
		fmt.Fprintf(b, `<rect x="%.1f" y="%.0f" width="%.1f" height="%.0f" fill="none" stroke="%s" stroke-width="1.5"><title>%s: %s (%s)</title></rect>`+"\n",
			x0-1, plotTop-2, x1-x0+2, rowH*float64(len(rs))+2, color, a.Check, html.EscapeString(a.Detail), a.Class)
		fmt.Fprintf(b, `<path d="M%.1f %.0f l-4 -8 h8 z" fill="%s"/>`+"\n", x0, plotTop-2, color)
	}
	axis(b, res, sc, height-22)
	b.WriteString("</svg>\n<p class=small>")
	for _, p := range []string{"lock", "fair", "rlock", "wlock", "sem", "redlock", "multi", "election"} {
		fmt.Fprintf(b, `<span style="background:%s;color:#fff;padding:0 4px;margin-right:4px">%s</span>`, primColor[p], p)
	}
	b.WriteString(" bars: holds; black tick: lost; red tick: its process ended; shaded bands: fault windows (hover for details); red/orange outlines and triangles: violations/expected anomalies.</p>\n")
}

// writeRates draws, per second, successful acquisitions (throughput) and
// the median and 99th percentile of the acquisitions' waits (latency).
func writeRates(b *strings.Builder, res *Results, h *history, t string) {
	sc := res.scale()
	n := int((sc.t1-sc.t0)/int64(time.Second)) + 1
	ok := make([]float64, n)
	waits := make([][]float64, n)
	for _, r := range h.recs {
		if r.Topo != t || r.Op != opAcquire || r.End < sc.t0 || r.End >= sc.t1 {
			continue
		}
		i := int((r.End - sc.t0) / int64(time.Second))
		if r.OK {
			ok[i]++
		}
		waits[i] = append(waits[i], float64(r.End-r.Start)/1e6)
	}
	p50, p99 := make([]float64, n), make([]float64, n)
	for i, ws := range waits {
		slices.Sort(ws)
		if len(ws) > 0 {
			p50[i], p99[i] = ws[len(ws)/2], ws[min(len(ws)-1, len(ws)*99/100)]
		}
	}
	chart(b, res, t, sc, "acquisitions per second (successful)", []series{{"ok/s", "#4e79a7", ok}})
	chart(b, res, t, sc, "acquire wait per second, ms (median, p99; log scale)", []series{{"p50", "#59a14f", p50}, {"p99", "#e15759", p99}})
}

type series struct {
	name, color string
	v           []float64
}

// chart draws series over the run (one point a second) with fault bands;
// the wait chart is on a log scale, since waits span 1 ms to 10 s.
func chart(b *strings.Builder, res *Results, t string, sc scale, title string, ss []series) {
	const h = 140.0
	logScale := strings.Contains(title, "log")
	top := 0.0
	for _, s := range ss {
		for _, v := range s.v {
			top = max(top, v)
		}
	}
	y := func(v float64) float64 {
		if logScale {
			return plotTop + h - h*logNorm(v, top)
		}
		return plotTop + h - h*v/max(top, 1)
	}
	fmt.Fprintf(b, "<h3>%s</h3>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\">\n", title, chartW, h+plotTop+26)
	faultBands(b, res, t, sc, 0, h+plotTop)
	bottom := "0"
	if logScale {
		bottom = "≤1"
	}
	fmt.Fprintf(b, `<text x="4" y="%.0f" font-size="10">%.0f</text><text x="4" y="%.0f" font-size="10">%s</text>`+"\n", plotTop+4, top, plotTop+h, bottom)
	for i, s := range ss {
		var pts []string
		for j, v := range s.v {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", sc.x(sc.t0+int64(j)*int64(time.Second)), y(v)))
		}
		fmt.Fprintf(b, `<path d="M%s" fill="none" stroke="%s" stroke-width="1.5"/>`+"\n", strings.Join(pts, " L"), s.color)
		fmt.Fprintf(b, `<text x="%d" y="%.0f" font-size="11" fill="%s">%s</text>`+"\n", 60+60*i, plotTop+30, s.color, s.name)
	}
	axis(b, res, sc, plotTop+h+2)
	b.WriteString("</svg>\n")
}
