package main

import (
	"context"
	"os/exec"
	"regexp"
	"slices"
	"testing"
	"time"
)

func TestParseRTT(t *testing.T) {
	ms := time.Millisecond
	for _, c := range []struct {
		in   string
		want []time.Duration
	}{
		{"", nil},
		{"  ", nil},
		{"0", []time.Duration{0}},
		{"2ms, 0,0.2ms,1ms", []time.Duration{0, 200 * time.Microsecond, ms, 2 * ms}},
		{"1ms,1ms,1000us", []time.Duration{ms}},
	} {
		got, err := parseRTT(c.in)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("parseRTT(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"1", "-1ms", "1ms,,2ms", "fast", "1ns"} {
		if got, err := parseRTT(bad); err == nil {
			t.Errorf("parseRTT(%q) = %v, want an error", bad, got)
		}
	}
}

func TestRowNames(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want string
	}{{0, "u1@0"}, {200 * time.Microsecond, "u1@0.2ms"}, {time.Millisecond, "u1@1ms"}, {1500 * time.Microsecond, "u1@1.5ms"}} {
		if got := rowName(sc1g, &c.d); got != c.want {
			t.Errorf("rowName(%v) = %q, want %q", c.d, got, c.want)
		}
	}
	if got := rowName(sc1g, nil); got != sc1g {
		t.Errorf("rowName without -rtt = %q, want %q", got, sc1g)
	}
}

func TestRTTRows(t *testing.T) {
	cfg := &config{retries: []time.Duration{time.Millisecond}, rtts: []time.Duration{0, time.Millisecond},
		only: regexp.MustCompile(`u1|64g|onekey|redlock`)}
	plan := rttRows(cfg)
	// Per distance: five libraries at u1 and 64g, five in the contended
	// row at one retry delay, three at Redlock-5 reused and three new
	// per acquisition.
	if want := 2 * (5 + 5 + 5 + 3 + 3); len(plan) != want {
		t.Fatalf("%d rows, want %d", len(plan), want)
	}
	for i, r := range plan {
		if r.at == nil || (i < len(plan)/2) != (*r.at == 0) {
			t.Fatalf("row %d %s: distances out of order", i, r.name())
		}
		if _, ok := rttScenarios[r.scenario]; !ok {
			t.Fatalf("row %s/%s is not in the sweep", r.name(), r.label)
		}
	}
	cfg.only = regexp.MustCompile(`^u1@1ms/relock$`)
	if plan := rttRows(cfg); len(plan) != 1 || plan[0].name() != "u1@1ms" {
		t.Fatalf("-only u1@1ms/relock: %d rows", len(plan))
	}
}

// TestProxyRTT measures PING through the proxy on a real redis-server:
// the round trip is at least the distance asked, and not much more.
func TestProxyRTT(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server not on PATH")
	}
	ctx := context.Background()
	e := &env{cfg: &config{}, dir: t.TempDir()}
	defer e.close()
	var err error
	if e.single, err = e.launch(ctx); err != nil {
		t.Fatal(err)
	}
	for _, rtt := range []time.Duration{200 * time.Microsecond, 2 * time.Millisecond} {
		v, err := e.at(ctx, rtt)
		if err != nil {
			t.Fatal(err)
		}
		if v.single.addr == e.single.addr || v.single.srv != e.single.srv {
			t.Fatalf("at %v: want a proxy to the same server", rtt)
		}
		var lat []time.Duration
		for range 30 {
			t0 := time.Now()
			if err := v.single.raw.Ping(ctx).Err(); err != nil {
				t.Fatal(err)
			}
			lat = append(lat, time.Since(t0))
		}
		slices.Sort(lat)
		// The median, with a slack for a busy machine.
		if med := lat[len(lat)/2]; med < rtt || med > rtt+2*time.Millisecond {
			t.Errorf("PING at %v: median %v", rtt, med)
		}
	}
	// A second call reuses the proxies.
	v1, _ := e.at(ctx, 2*time.Millisecond)
	v2, _ := e.at(ctx, 2*time.Millisecond)
	if v1 != v2 || len(e.views) != 2 {
		t.Fatal("at does not reuse its views")
	}
}
