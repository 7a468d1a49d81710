package main

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// jobRun is one run of the job, as a candidate stamped it.
type jobRun struct {
	proc       string
	epoch      int64
	start, end int64 // µs
}

// report prints what each process observed and the leaderships, and
// checks that runs never overlapped and epochs only grew.
func report(out io.Writer, lines []string) error {
	var runs []jobRun
	observed := map[string][]string{}
	for _, l := range lines {
		f := strings.Fields(l)
		switch {
		case len(f) == 5 && f[0] == "run":
			r := jobRun{proc: f[1]}
			r.epoch, _ = strconv.ParseInt(f[2], 10, 64)
			r.start, _ = strconv.ParseInt(f[3], 10, 64)
			r.end, _ = strconv.ParseInt(f[4], 10, 64)
			runs = append(runs, r)
		case len(f) >= 3 && f[0] == "observe":
			observed[f[1]] = append(observed[f[1]], strings.Join(f[2:], " "))
		}
	}
	for _, id := range []string{"1", "2", "3"} {
		fmt.Fprintf(out, "process %s observed: %s\n", id, strings.Join(compact(observed[id]), " -> "))
	}
	slices.SortFunc(runs, func(a, b jobRun) int { return int(a.start - b.start) })
	var terms []string
	for i, r := range runs {
		if i > 0 {
			p := runs[i-1]
			if r.start < p.end {
				return fmt.Errorf("runs overlap: process %s (epoch %d) and process %s (epoch %d)", p.proc, p.epoch, r.proc, r.epoch)
			}
			if r.epoch < p.epoch {
				return fmt.Errorf("epoch went back: %d after %d", r.epoch, p.epoch)
			}
			if r.epoch == p.epoch {
				continue
			}
		}
		terms = append(terms, "process "+r.proc)
	}
	fmt.Fprintf(out, "%d runs by %s, one process at a time, epochs growing\n", len(runs), strings.Join(terms, ", then "))
	return nil
}

// compact shortens an observer's sequence for printing: "leader
// process-1 epoch 1795..." becomes "process-1".
func compact(seq []string) []string {
	out := make([]string, len(seq))
	for i, s := range seq {
		if v, ok := strings.CutPrefix(s, "leader "); ok {
			s, _, _ = strings.Cut(v, " ")
		}
		out[i] = s
	}
	return out
}
