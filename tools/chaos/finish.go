package main

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"time"
)

// Results is results.json: the run, its faults as they happened, the
// checkers' verdicts and every anomaly.
type Results struct {
	Seed      uint64       `json:"seed"`
	Duration  string       `json:"duration"`
	Lease     string       `json:"lease"`
	Topos     []string     `json:"topologies"`
	Start     int64        `json:"start"`
	QuietAt   int64        `json:"quiet_at"`
	StopAt    int64        `json:"stop_at"`
	Ops       int          `json:"ops"`
	Holds     int          `json:"holds"`
	Faults    []FaultEvent `json:"faults"`
	Verdicts  []Verdict    `json:"verdicts"`
	Anomalies []Anomaly    `json:"anomalies"`
	KeysLeft  []KeyLeft    `json:"keys_left"`
	IncEnds   []IncEnd     `json:"incarnation_ends"` // when each worker process ended
	Invalid   string       `json:"invalid,omitzero"` // why the run proves nothing
	Pass      bool         `json:"pass"`             // no violation, and valid
}

// finish checks the history and writes results.json and report.html.
func (r *runner) finish(stopAt int64, events []FaultEvent, keys []KeyLeft) error {
	recs, err := readHistory(filepath.Join(r.out, "history"))
	if err != nil {
		return err
	}
	slices.SortFunc(events, func(a, b FaultEvent) int { return a.ID - b.ID })
	r.mu.Lock()
	ends, invalid := slices.Clone(r.incEnds), r.invalid
	r.mu.Unlock()
	quietAt := r.start.Add(r.quiet()).UnixNano()
	h := newHistory(recs, events, ends, stopAt, quietAt, r.lease)
	verdicts, anomalies := h.runChecks(r.lay.Topos, keys)
	// Empty lists, not null, in results.json.
	anomalies, keys, events = nonNil(anomalies), nonNil(keys), nonNil(events)
	res := Results{Seed: r.seed, Duration: r.duration.String(), Lease: r.lease.String(), Topos: r.lay.Topos,
		Start: r.start.UnixNano(), QuietAt: quietAt, StopAt: stopAt, Ops: len(recs), Holds: len(h.holds),
		Faults: events, Verdicts: verdicts, Anomalies: anomalies, KeysLeft: keys, IncEnds: ends, Pass: true}
	for _, v := range verdicts {
		if v.Verdict == "fail" {
			res.Pass = false
		}
	}
	if invalid != nil {
		res.Invalid, res.Pass = invalid.Error(), false
	}
	if err := writeJSON(filepath.Join(r.out, "results.json"), res); err != nil {
		return err
	}
	if err := writeReport(filepath.Join(r.out, "report.html"), &res, h); err != nil {
		return err
	}
	printSummary(r, &res)
	switch {
	case invalid != nil:
		return fmt.Errorf("run invalid: %w", invalid)
	case !res.Pass:
		return errViolations
	}
	return nil
}

// errViolations ends a run that found a violation: exit status 3, so that
// a scheduled job fails while its report is still written.
var errViolations = errors.New("violations found (see results.json and report.html)")

func printSummary(r *runner, res *Results) {
	fmt.Fprintf(r.log, "\n%d ops, %d holds, %d faults, %d anomalies\n", res.Ops, res.Holds, len(res.Faults), len(res.Anomalies))
	for _, v := range res.Verdicts {
		fmt.Fprintf(r.log, "  %-9s %-19s %-8s checked %-5d expected %-4d violations %d\n",
			v.Topo, v.Check, v.Verdict, v.Checked, v.Expected, v.Violated)
	}
	for _, a := range res.Anomalies {
		if a.Class == "violation" {
			fmt.Fprintf(r.log, "  VIOLATION %s %s %s @%.1fs: %s (faults %v)\n", a.Topo, a.Check, a.Name,
				time.Duration(a.From-res.Start).Seconds(), a.Detail, a.Faults)
		}
	}
	abs, _ := filepath.Abs(filepath.Join(r.out, "report.html"))
	fmt.Fprintf(r.log, "report: %s\n", abs)
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
