//go:build chaos

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestShortRunReport runs a short seeded chaos run of the real binary and
// renders its report in headless Chromium: the run must finish by itself,
// leave no process behind, and its report must draw charts.
func TestShortRunReport(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "chaos")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out := filepath.Join(dir, "out")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-seed", "3", "-duration", "25s", "-out", out)
	log, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if err != nil && !(errors.As(err, &exit) && exit.ExitCode() == 3) { // 3: violations, still reported
		t.Fatalf("chaos run: %v\n%s", err, log)
	}
	t.Logf("run output:\n%s", tail(string(log), 40))
	checkResults(t, out)
	checkNoProcessLeft(t, out)
	// The run's schedule is the one the seed and flags give, without a run.
	dry, err := exec.Command(bin, "-dry-run", "-seed", "3", "-duration", "25s").Output()
	if err != nil {
		t.Fatalf("-dry-run: %v", err)
	}
	if saved, _ := os.ReadFile(filepath.Join(out, "schedule.json")); !bytes.Equal(bytes.TrimSpace(saved), bytes.TrimSpace(dry)) {
		t.Errorf("schedule.json differs from -dry-run's schedule for the same seed")
	}
	report := filepath.Join(out, "report.html")
	checkScreenshot(t, report, filepath.Join(dir, "report.png"))
	checkDOM(t, report)
}

// TestInterruptCleansUp sends SIGINT to a run midway: it must end soon
// and leave no server or worker behind.
func TestInterruptCleansUp(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "chaos")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out := filepath.Join(dir, "out")
	cmd := exec.Command(bin, "-seed", "4", "-duration", "2m", "-out", out)
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(15 * time.Second) // servers up, workers and faults running
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(log.String(), "interrupted") {
			t.Errorf("run ended with %v, want an interrupted run:\n%s", err, tail(log.String(), 10))
		}
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("run still going 30 s after SIGINT:\n%s", tail(log.String(), 10))
	}
	time.Sleep(500 * time.Millisecond) // the kernel reaps the last children
	checkNoProcessLeft(t, out)
}

func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

func checkResults(t *testing.T, out string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var res Results
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatalf("results.json: %v", err)
	}
	if res.Ops < 500 || res.Holds < 100 || len(res.Faults) == 0 {
		t.Errorf("results: %d ops, %d holds, %d faults; want a run that did something", res.Ops, res.Holds, len(res.Faults))
	}
	if len(res.Verdicts) != len(checkNames)*len(res.Topos) || len(res.Topos) != 3 {
		t.Errorf("%d verdicts over %v, want %d per topology", len(res.Verdicts), res.Topos, len(checkNames))
	}
	for _, f := range res.Faults {
		if f.At == 0 || f.Until < f.At {
			t.Errorf("fault %v: applied %d, undone %d", f.Fault, f.At, f.Until)
		}
	}
	sched, err := os.ReadFile(filepath.Join(out, "schedule.json"))
	if err != nil || !bytes.Contains(sched, []byte(`"kind"`)) {
		t.Errorf("schedule.json: %v %q", err, tail(string(sched), 3))
	}
}

// checkNoProcessLeft looks for any process working in the run's output
// directory (every server does: redis-server rewrites its command line, so
// that is not enough) or naming it on its command line (every worker).
func checkNoProcessLeft(t *testing.T, out string) {
	t.Helper()
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		cwd, _ := os.Readlink(filepath.Join(d, "cwd"))
		cmdline, _ := os.ReadFile(filepath.Join(d, "cmdline"))
		if strings.HasPrefix(cwd, out) || bytes.Contains(cmdline, []byte(out)) {
			t.Errorf("process left behind: %s in %s: %q", d, cwd, bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '}))
		}
	}
}

func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("chromium not found: make test-chaos installs it (apt-get install chromium)")
	return ""
}

func chromiumArgs(t *testing.T) []string {
	return []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + t.TempDir()}
}

// checkScreenshot renders the report and checks the PNG shows something:
// not empty, not one colour.
func checkScreenshot(t *testing.T, report, shot string) {
	t.Helper()
	args := append(chromiumArgs(t), "--screenshot="+shot, "--window-size=1400,2000", "file://"+report)
	if out, err := exec.Command(chromium(t), args...).CombinedOutput(); err != nil {
		t.Fatalf("chromium --screenshot: %v\n%s", err, out)
	}
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	colours := map[[4]uint32]bool{}
	bnd := img.Bounds()
	for y := bnd.Min.Y; y < bnd.Max.Y; y += 2 {
		for x := bnd.Min.X; x < bnd.Max.X; x += 2 {
			r, g, b, a := img.At(x, y).RGBA()
			colours[[4]uint32{r, g, b, a}] = true
		}
	}
	if bnd.Dx() < 1000 || bnd.Dy() < 1000 || len(colours) < 20 {
		t.Errorf("screenshot %v with %d colours: want a full page with charts", bnd, len(colours))
	}
	if dst := os.Getenv("CHAOS_SCREENSHOT"); dst != "" { // keep it as evidence
		b, _ := os.ReadFile(shot)
		_ = os.WriteFile(dst, b, 0o644)
	}
}

// checkDOM counts the SVG elements Chromium rendered into the DOM.
func checkDOM(t *testing.T, report string) {
	t.Helper()
	args := append(chromiumArgs(t), "--dump-dom", "file://"+report)
	dom, err := exec.Command(chromium(t), args...).Output()
	if err != nil {
		t.Fatalf("chromium --dump-dom: %v", err)
	}
	svgs := bytes.Count(dom, []byte("<svg"))
	rects := bytes.Count(dom, []byte("<rect"))
	lines := bytes.Count(dom, []byte("<line")) + bytes.Count(dom, []byte("<path"))
	t.Logf("DOM: %d svg, %d rect, %d line/path", svgs, rects, lines)
	if svgs < 9 || rects < 100 || lines < 20 {
		t.Errorf("DOM: %d <svg>, %d <rect>, %d <line>/<path>; want 3 charts a topology and their marks", svgs, rects, lines)
	}
}
