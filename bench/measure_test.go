package main

import (
	"testing"
	"time"
)

func TestParseStat(t *testing.T) {
	// Fields 14 and 15 (utime, stime) are 250 and 50 ticks; the name holds
	// a space and a ')'.
	line := "4242 (redis server) a) S 1 4242 4242 0 -1 4194560 1000 0 0 0 250 50 0 0 20 0 5 0 100 0 0\n"
	got, err := parseStat(line)
	if err != nil {
		t.Fatal(err)
	}
	if want := 300 * clockTick; got != want {
		t.Fatalf("parseStat = %v, want %v", got, want)
	}
	if _, err := parseStat("4242 (x) S 1 2"); err == nil {
		t.Fatal("short line: want an error")
	}
}

func TestPct(t *testing.T) {
	var lat []time.Duration
	for i := 1; i <= 1000; i++ {
		lat = append(lat, time.Duration(i))
	}
	for _, c := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 500}, {0.99, 990}, {0.999, 999}, {1, 1000}, {0, 1}} {
		if got := pct(lat, c.q); got != c.want {
			t.Errorf("pct(%v) = %v, want %v", c.q, got, c.want)
		}
	}
	if pct(nil, 0.5) != 0 {
		t.Error("pct of nothing: want 0")
	}
}

func TestGuard(t *testing.T) {
	var g rwGuard
	g.enterRead()
	g.enterRead()
	g.leaveRead()
	g.leaveRead()
	g.enterWrite()
	g.leaveWrite()
	if n := g.violations.Load(); n != 0 {
		t.Fatalf("violations = %d, want 0", n)
	}
	g.enterRead()
	g.enterWrite()
	if n := g.violations.Load(); n != 1 {
		t.Fatalf("violations = %d, want 1 (writer with a reader inside)", n)
	}
}

func TestVersionAtLeast(t *testing.T) {
	for v, want := range map[string]bool{"7.0.15": true, "7.0.4": false, "7.2.0": true, "6.2.14": false, "7": false} {
		if got := versionAtLeast(v, 7, 0, 5); got != want {
			t.Errorf("versionAtLeast(%q) = %v, want %v", v, got, want)
		}
	}
}
