package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Charts of the -rtt sweep, as self-contained SVG written by hand: a few
// lines and rectangles need no charting dependency.

// series is one library's values, one per x (NaN where a row is missing).
type series struct {
	name string
	ys   []float64
}

// chart is a line chart (bars false: one polyline per series over xs) or
// a grouped bar chart (bars true: one group per x, one bar per series).
type chart struct {
	title, yLabel string
	xs            []float64 // line charts: the x positions
	xLabels       []string  // one per x
	series        []series
	bars          bool
}

// Layout, in pixels.
const (
	chartW, chartH      = 820, 420
	padL, padR          = 70, 220 // the legend sits right of the plot
	padT, padB          = 44, 56
	plotW, plotH        = chartW - padL - padR, chartH - padT - padB
	legendX, legendLine = chartW - padR + 20, 20
)

// palette colours series in order: the libraries come in the same order
// in every chart, so a library keeps its colour.
var palette = []string{"#7f7f7f", "#d62728", "#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2", "#bcbd22"}

func colour(i int) string { return palette[i%len(palette)] }

// niceTicks returns 0 and about n more ticks of a 1-2-5 step up to at
// least top.
func niceTicks(top float64, n int) []float64 {
	if !(top > 0) {
		top = 1
	}
	raw := top / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag * 10
	for _, m := range []float64{1, 2, 5} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	var ticks []float64
	for i := 0; ; i++ {
		v := float64(i) * step
		ticks = append(ticks, v)
		if v >= top*(1-1e-9) {
			return ticks
		}
	}
}

// logRange returns the smallest and largest positive values.
func (c *chart) logRange() (lo, hi float64) {
	lo = math.Inf(1)
	for _, s := range c.series {
		for _, y := range s.ys {
			if y > 0 {
				lo, hi = min(lo, y), max(hi, y)
			}
		}
	}
	return lo, hi
}

// logTicks returns 1-2-5 ticks spanning lo..hi.
func logTicks(lo, hi float64) []float64 {
	var ticks []float64
	for e := math.Floor(math.Log10(lo)); ; e++ {
		for _, m := range []float64{1, 2, 5} {
			v := m * math.Pow(10, e)
			if v*2 > lo && (len(ticks) == 0 || ticks[len(ticks)-1] < hi) {
				ticks = append(ticks, v)
			}
		}
		if ticks[len(ticks)-1] >= hi {
			return ticks
		}
	}
}

// fmtTick prints a tick value shortly: 0.5, 40, 12k.
func fmtTick(v float64) string {
	if v >= 1000 {
		return strconv.FormatFloat(v/1000, 'g', 4, 64) + "k"
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

func esc(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;").Replace(s)
}

// svg renders the chart.
func (c *chart) svg() string {
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n",
		chartW, chartH, chartW, chartH)
	fmt.Fprintf(&b, `<rect x="0" y="0" width="%d" height="%d" fill="white"/>`+"\n", chartW, chartH)
	fmt.Fprintf(&b, `<text x="%d" y="24" font-size="15" font-weight="bold">%s</text>`+"\n", padL, esc(c.title))

	top := 0.0
	for _, s := range c.series {
		for _, y := range s.ys {
			if !math.IsNaN(y) {
				top = max(top, y)
			}
		}
	}
	ticks := niceTicks(top, 5)
	yMax := ticks[len(ticks)-1]
	py := func(v float64) float64 { return padT + plotH - v/yMax*plotH }
	// Values over more than a decade and a half, as throughput from
	// loopback to 2 ms, get a log scale: on a linear one the far rows
	// lie flat on the axis.
	if lo, hi := c.logRange(); !c.bars && hi >= 30*lo {
		ticks = logTicks(lo, hi)
		l0, l1 := math.Log10(ticks[0]), math.Log10(ticks[len(ticks)-1])
		py = func(v float64) float64 { return padT + plotH - (math.Log10(v)-l0)/(l1-l0)*plotH }
	}
	for _, t := range ticks {
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/>`+"\n", padL, py(t), padL+plotW, py(t))
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end" dy="4">%s</text>`+"\n", padL-6, py(t), fmtTick(t))
	}
	fmt.Fprintf(&b, `<text transform="translate(16 %d) rotate(-90)" text-anchor="middle">%s</text>`+"\n", padT+plotH/2, esc(c.yLabel))
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`+"\n", padL, padT, padL, padT+plotH)
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`+"\n", padL, padT+plotH, padL+plotW, padT+plotH)
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">round-trip time</text>`+"\n", padL+plotW/2, chartH-12)

	if c.bars {
		c.drawBars(&b, py)
	} else {
		c.drawLines(&b, py)
	}
	for i, s := range c.series {
		y := padT + 10 + i*legendLine
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="14" height="10" fill="%s"/>`+"\n", legendX, y-9, colour(i))
		fmt.Fprintf(&b, `<text x="%d" y="%d">%s</text>`+"\n", legendX+20, y, esc(s.name))
	}
	b.WriteString("</svg>\n")
	return b.String()
}

// drawLines draws the x ticks and one polyline with point markers per
// series, on a linear x axis.
func (c *chart) drawLines(b *strings.Builder, py func(float64) float64) {
	xMax := 0.0
	for _, x := range c.xs {
		xMax = max(xMax, x)
	}
	if xMax == 0 {
		xMax = 1
	}
	px := func(x float64) float64 { return padL + 10 + x/xMax*(plotW-20) }
	for i, x := range c.xs {
		fmt.Fprintf(b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="black"/>`+"\n", px(x), padT+plotH, px(x), padT+plotH+5)
		fmt.Fprintf(b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", px(x), padT+plotH+19, esc(c.xLabels[i]))
	}
	for i, s := range c.series {
		var pts []string
		for j, y := range s.ys {
			if j < len(c.xs) && !math.IsNaN(y) {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(c.xs[j]), py(y)))
			}
		}
		fmt.Fprintf(b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"/>`+"\n", strings.Join(pts, " "), colour(i))
		for _, p := range pts {
			x, y, _ := strings.Cut(p, ",")
			fmt.Fprintf(b, `<circle cx="%s" cy="%s" r="3" fill="%s"/>`+"\n", x, y, colour(i))
		}
	}
}

// drawBars draws one group of bars per x, each bar labelled with its value
// (a short bar next to a tall one is otherwise unreadable).
func (c *chart) drawBars(b *strings.Builder, py func(float64) float64) {
	groups := len(c.xLabels)
	if groups == 0 {
		return
	}
	gw := float64(plotW) / float64(groups)
	bw := gw * 0.8 / float64(max(len(c.series), 1))
	for g, label := range c.xLabels {
		x0 := padL + float64(g)*gw + gw*0.1
		fmt.Fprintf(b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", padL+(float64(g)+0.5)*gw, padT+plotH+19, esc(label))
		for i, s := range c.series {
			if g >= len(s.ys) || math.IsNaN(s.ys[g]) {
				continue
			}
			v := s.ys[g]
			x := x0 + float64(i)*bw
			fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>`+"\n", x, py(v), bw-1, py(0)-py(v), colour(i))
			fmt.Fprintf(b, `<text transform="translate(%.1f %.1f) rotate(-90)" font-size="9">%s</text>`+"\n", x+bw/2+3, py(v)-3, fmtTick(v))
		}
	}
}

// ---- the sweep's charts ----

// rowAt returns the row of scenario and label at distance d.
func rowAt(results []*result, scenario, label string, d time.Duration) *result {
	for _, r := range results {
		if r.scenario == scenario && r.label == label && r.at != nil && *r.at == d && len(r.roles) > 0 {
			return r
		}
	}
	return nil
}

// sweepSeries is one series per library of scenario, in the rows' order,
// with metric of its row at each distance.
func sweepSeries(results []*result, rtts []time.Duration, scenario string, metric func(*result) float64) []series {
	var out []series
	seen := map[string]bool{}
	for _, r := range results {
		if r.scenario != scenario || seen[r.label] {
			continue
		}
		seen[r.label] = true
		s := series{name: r.label}
		for _, d := range rtts {
			v := math.NaN()
			if row := rowAt(results, scenario, r.label, d); row != nil {
				v = metric(row)
			}
			s.ys = append(s.ys, v)
		}
		out = append(out, s)
	}
	return out
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// sweepCharts builds the charts of one run of the sweep, by file name.
func sweepCharts(rtts []time.Duration, results []*result) map[string]*chart {
	xs := make([]float64, len(rtts))
	xl := make([]string, len(rtts))
	for i, d := range rtts {
		xs[i], xl[i] = ms(d), fmtRTT(d)
	}
	charts := map[string]*chart{}
	for _, sc := range []struct{ name, file, what string }{
		{sc1g, "u1", "1 goroutine, own key"},
		{sc64g, "64g", "64 goroutines, own keys"},
		{scRedlock, "redlock", "Redlock over 5 masters, 1 goroutine"},
		{scRedlockNew, "redlock-new", "a new Redlock over 5 masters per acquisition, 1 goroutine"},
	} {
		tp := sweepSeries(results, rtts, sc.name, func(r *result) float64 { return r.rate(r.roles[0]) })
		p99 := sweepSeries(results, rtts, sc.name, func(r *result) float64 { return ms(r.roles[0].p(.99)) })
		if len(tp) == 0 {
			continue
		}
		charts["throughput-"+sc.file+".svg"] = &chart{title: "Throughput: " + sc.what, yLabel: "Lock+Unlock pairs/s",
			xs: xs, xLabels: xl, series: tp}
		charts["p99-"+sc.file+".svg"] = &chart{title: "p99 Lock+Unlock latency: " + sc.what, yLabel: "p99 (ms)",
			xs: xs, xLabels: xl, series: p99}
	}
	if mw := sweepSeries(results, rtts, scOneKey, func(r *result) float64 { return ms(r.roles[0].maxLat()) }); len(mw) > 0 {
		charts["onekey-maxwait.svg"] = &chart{title: "Max wait to acquire: 16 goroutines on one key", yLabel: "max wait (ms)",
			xLabels: xl, series: mw, bars: true}
	}
	return charts
}

// writeCharts writes the sweep's charts into dir and returns their paths.
func writeCharts(dir string, rtts []time.Duration, results []*result) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	charts := sweepCharts(rtts, results)
	var files []string
	for _, name := range []string{"throughput-u1.svg", "throughput-64g.svg", "throughput-redlock.svg",
		"throughput-redlock-new.svg", "p99-u1.svg", "p99-64g.svg", "p99-redlock.svg", "p99-redlock-new.svg",
		"onekey-maxwait.svg"} {
		c := charts[name]
		if c == nil {
			continue
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(c.svg()), 0o644); err != nil {
			return files, err
		}
		files = append(files, path)
	}
	return files, nil
}
