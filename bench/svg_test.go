package main

import (
	"encoding/xml"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// svgCounts parses an SVG and counts its elements by name, and collects
// the text of its <text> elements.
func svgCounts(t *testing.T, doc string) (map[string]int, []string) {
	t.Helper()
	counts := map[string]int{}
	var texts []string
	d := xml.NewDecoder(strings.NewReader(doc))
	inText := false
	for {
		tok, err := d.Token()
		if err != nil {
			if err != io.EOF {
				t.Fatalf("parse: %v", err)
			}
			break
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			counts[tok.Name.Local]++
			inText = tok.Name.Local == "text"
		case xml.CharData:
			if inText {
				texts = append(texts, string(tok))
			}
		case xml.EndElement:
			inText = false
		}
	}
	if counts["svg"] != 1 {
		t.Fatalf("%d <svg> elements", counts["svg"])
	}
	return counts, texts
}

func hasAll(t *testing.T, texts []string, want ...string) {
	t.Helper()
	for _, w := range want {
		found := false
		for _, s := range texts {
			if s == w {
				found = true
			}
		}
		if !found {
			t.Errorf("no text %q in %q", w, texts)
		}
	}
}

func TestLineChartSVG(t *testing.T) {
	nan := math.NaN()
	c := &chart{title: "Throughput <u1>", yLabel: "pairs/s", xs: []float64{0, 0.2, 1, 2},
		xLabels: []string{"0", "0.2ms", "1ms", "2ms"}, series: []series{
			{"relock", []float64{5000, 1400, 390, 200}},
			{"bsm/redislock", []float64{8000, 1500, nan, 210}},
			{"redsync", []float64{6000, 1300, 380, 190}},
		}}
	counts, texts := svgCounts(t, c.svg())
	if counts["polyline"] != 3 {
		t.Errorf("%d polylines, want one per library", counts["polyline"])
	}
	// The background, then one legend swatch per library.
	if counts["rect"] != 1+3 {
		t.Errorf("%d rects, want 4", counts["rect"])
	}
	if counts["circle"] != 4+3+4 {
		t.Errorf("%d point markers, want 11 (one value missing)", counts["circle"])
	}
	hasAll(t, texts, "Throughput <u1>", "pairs/s", "relock", "bsm/redislock", "redsync", "0", "0.2ms", "1ms", "2ms", "100", "10k")
}

func TestBarChartSVG(t *testing.T) {
	c := &chart{title: "Max wait", yLabel: "ms", bars: true, xLabels: []string{"0", "1ms"}, series: []series{
		{"relock", []float64{1.5, 12}},
		{"redsync (1ms)", []float64{30, math.NaN()}},
	}}
	counts, texts := svgCounts(t, c.svg())
	// The background, three bars (one value missing), two legend swatches.
	if counts["rect"] != 1+3+2 {
		t.Errorf("%d rects, want 6", counts["rect"])
	}
	if counts["polyline"]+counts["path"] != 0 {
		t.Errorf("a bar chart with lines")
	}
	hasAll(t, texts, "Max wait", "relock", "redsync (1ms)", "0", "1ms", "30")
}

func TestNiceTicks(t *testing.T) {
	for _, c := range []struct {
		top  float64
		want int // ticks including 0
		last float64
	}{{8000, 5, 8000}, {12.3, 4, 15}, {0, 6, 1}, {0.9, 6, 1}} {
		ticks := niceTicks(c.top, 5)
		if len(ticks) != c.want || math.Abs(ticks[len(ticks)-1]-c.last) > 1e-9 {
			t.Errorf("niceTicks(%v) = %v", c.top, ticks)
		}
	}
}

// TestWriteCharts writes the sweep's nine charts from made-up rows.
func TestWriteCharts(t *testing.T) {
	rtts := []time.Duration{0, time.Millisecond}
	var results []*result
	for _, sc := range []string{sc1g, sc64g, scOneKey, scRedlock, scRedlockNew} {
		for i := range rtts {
			for _, label := range []string{libRaw, libRelock} {
				results = append(results, &result{scenario: sc, label: label, at: &rtts[i], window: time.Second,
					roles: []role{{ops: 100, lat: []time.Duration{time.Millisecond, 3 * time.Millisecond}}}})
			}
		}
	}
	dir := t.TempDir()
	files, err := writeCharts(dir, rtts, results)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 9 {
		t.Fatalf("wrote %v, want 9 charts", files)
	}
	b, err := os.ReadFile(filepath.Join(dir, "onekey-maxwait.svg"))
	if err != nil {
		t.Fatal(err)
	}
	counts, texts := svgCounts(t, string(b))
	if counts["rect"] != 1+4+2 {
		t.Errorf("max-wait chart: %d rects, want 7", counts["rect"])
	}
	hasAll(t, texts, libRaw, libRelock, "3")
}

func TestLogTicks(t *testing.T) {
	got := logTicks(210, 12300)
	want := []float64{200, 500, 1000, 2000, 5000, 10000, 20000}
	if len(got) != len(want) {
		t.Fatalf("logTicks = %v, want %v", got, want)
	}
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-6 {
			t.Fatalf("logTicks = %v, want %v", got, want)
		}
	}
}
