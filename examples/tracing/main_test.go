package main

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// span is the part of stdouttrace's JSON the test reads.
type span struct {
	Name       string
	Attributes []struct {
		Key   string
		Value struct{ Value any }
	}
	Status struct{ Code string }
}

func (s span) attr(key string) any {
	for _, a := range s.Attributes {
		if a.Key == key {
			return a.Value.Value
		}
	}
	return nil
}

func TestTracing(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	got := out.String()
	if testing.Verbose() {
		t.Log("\n" + got)
	}

	// The exporters pretty-print one JSON object per span, and one for the
	// metrics, each from a "{" line to a "}" line.
	var acquires []span
	var metrics string
	for _, obj := range objects(got) {
		if strings.Contains(obj, `"ScopeMetrics"`) {
			metrics = obj
			continue
		}
		var s span
		if err := json.Unmarshal([]byte(obj), &s); err != nil {
			t.Fatalf("a span does not parse: %v\n%s", err, obj)
		}
		if strings.HasPrefix(s.Name, "acquire ") {
			acquires = append(acquires, s)
		}
	}
	var names []string
	for _, s := range acquires {
		names = append(names, s.Name)
	}
	want := []string{"acquire lock", "acquire lock", "acquire lock", "acquire read lock", "acquire semaphore"}
	if !slices.Equal(names, want) {
		t.Fatalf("acquire spans = %q, want %q", names, want)
	}
	for i, w := range []struct {
		reentrant any
		outcome   string
	}{{false, "acquired"}, {true, "acquired"}, {nil, "not_acquired"}, {nil, "acquired"}, {nil, "acquired"}} {
		s := acquires[i]
		if s.attr("lock.outcome") != w.outcome || w.reentrant != nil && s.attr("lock.reentrant") != w.reentrant {
			t.Errorf("span %d %q: outcome %v, reentrant %v; want %v, %v", i, s.Name,
				s.attr("lock.outcome"), s.attr("lock.reentrant"), w.outcome, w.reentrant)
		}
		if s.Status.Code == "Error" {
			t.Errorf("span %d %q has an error status", i, s.Name)
		}
	}
	if acquires[1].attr("lock.fencing_token").(float64) <= acquires[0].attr("lock.fencing_token").(float64) {
		t.Error("the re-entry's fencing token is not larger")
	}
	if acquires[4].attr("semaphore.permits") != 2.0 {
		t.Errorf("semaphore.permits = %v, want 2", acquires[4].attr("semaphore.permits"))
	}

	// Counters by primitive and outcome; nothing still held at the end; the
	// watchdog renewed the leases held through the 250 ms of work.
	sums := map[string]float64{}
	var m struct {
		ScopeMetrics []struct {
			Metrics []struct {
				Name string
				Data struct {
					DataPoints []struct {
						Attributes []struct {
							Key   string
							Value struct{ Value any }
						}
						Value float64
					}
				}
			}
		}
	}
	if err := json.Unmarshal([]byte(metrics), &m); err != nil {
		t.Fatalf("the metrics do not parse: %v\n%s", err, metrics)
	}
	for _, sm := range m.ScopeMetrics {
		for _, mt := range sm.Metrics {
			for _, dp := range mt.Data.DataPoints {
				key := mt.Name
				for _, a := range dp.Attributes {
					if a.Key == "lock.primitive" || a.Key == "lock.outcome" {
						key += " " + a.Value.Value.(string)
					}
				}
				sums[key] += dp.Value
				sums[mt.Name] += dp.Value
			}
		}
	}
	for key, want := range map[string]float64{
		"relock.acquisitions acquired lock":      2,
		"relock.acquisitions not_acquired lock":  1,
		"relock.acquisitions acquired rwlock":    1,
		"relock.acquisitions acquired semaphore": 1,
		"relock.held":                            0,
	} {
		if sums[key] != want {
			t.Errorf("%s = %v, want %v", key, sums[key], want)
		}
	}
	if sums["relock.watchdog.renewals"] == 0 {
		t.Error("no watchdog renewals counted")
	}
}

func objects(s string) []string {
	var objs []string
	start := -1
	lines := strings.SplitAfter(s, "\n")
	for i, l := range lines {
		switch strings.TrimRight(l, "\n") {
		case "{":
			start = i
		case "}":
			if start >= 0 {
				objs = append(objs, strings.Join(lines[start:i+1], ""))
				start = -1
			}
		}
	}
	return objs
}
