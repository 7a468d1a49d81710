package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReportDraws writes the report of a hand-made history and checks it
// is self-contained and draws the holds, the fault and the anomaly.
func TestReportDraws(t *testing.T) {
	a := acq("w0#0", "lock", "L", "a", 0, 0, 10)
	b := acq("w1#0", "lock", "L", "b", 0, 50, 60)
	fault := FaultEvent{Fault: Fault{ID: 1, Kind: fPauseServer, Topo: "t", Target: "t/m0"}, At: 20 * ms, Until: 40 * ms}
	h := hist([]Record{a, endOf(a, opRelease, 100), b, endOf(b, opLost, 120)}, fault)
	vs, as := h.runChecks([]string{"t"}, nil)
	res := &Results{Seed: 1, Duration: "1s", Lease: "2s", Topos: []string{"t"}, Start: 0, QuietAt: 500 * ms,
		StopAt: 1000 * ms, Faults: []FaultEvent{fault}, Verdicts: vs, Anomalies: as}
	path := filepath.Join(t.TempDir(), "report.html")
	if err := writeReport(path, res, h); err != nil {
		t.Fatal(err)
	}
	b2, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	page := string(b2)
	for _, want := range []string{"<svg", `fill="#4e79a7"`, "<title>#1 ", "pause-server", "mutual exclusion", "violation",
		`class="fail"`, "make chaos SEED=1"} {
		if !strings.Contains(page, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	for _, bad := range []string{"<script", `src="http`, `href="http`, "<link", "@import"} {
		if strings.Contains(page, bad) {
			t.Errorf("report is not self-contained: it has %q", bad)
		}
	}
	if n := strings.Count(page, "<svg"); n != 3 {
		t.Errorf("%d charts, want 3 (timeline, throughput, latency)", n)
	}
}
