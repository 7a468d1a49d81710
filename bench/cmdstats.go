package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
)

// cmdStat is one command's line of INFO commandstats, summed over the
// servers of a row.
type cmdStat struct {
	calls int64
	usec  int64
}

// resetCmdStats zeroes the command statistics of every server (-cmdstats),
// so that what the measured window ran can be read at its end.
func (e *env) resetCmdStats(ctx context.Context) {
	for _, n := range e.nodes() {
		_ = n.raw.ConfigResetStat(ctx).Err()
	}
}

// readCmdStats sums INFO commandstats over every server. Scripts show as
// evalsha; the bench's own INFO and CONFIG calls are left out.
func (e *env) readCmdStats(ctx context.Context) map[string]cmdStat {
	out := map[string]cmdStat{}
	for _, n := range e.nodes() {
		info, err := n.raw.Info(ctx, "commandstats").Result()
		if err != nil {
			continue
		}
		for l := range strings.SplitSeq(info, "\n") {
			name, rest, ok := strings.Cut(strings.TrimSpace(l), ":")
			name, found := strings.CutPrefix(name, "cmdstat_")
			if !ok || !found || name == "info" || strings.HasPrefix(name, "config") {
				continue
			}
			s := out[name]
			for f := range strings.SplitSeq(rest, ",") {
				k, v, _ := strings.Cut(f, "=")
				x, _ := strconv.ParseInt(v, 10, 64)
				switch k {
				case "calls":
					s.calls += x
				case "usec":
					s.usec += x
				}
			}
			out[name] = s
		}
	}
	return out
}

// printCmdStats prints, per row, the commands Redis ran per op in the
// measured window and the server time they took.
func printCmdStats(w io.Writer, results []*result) {
	fmt.Fprintln(w, "\nredis commands per op in the measured window (INFO commandstats): calls/op, µs/op of server time")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, r := range results {
		var ops int64
		for _, ro := range r.roles {
			ops += ro.ops
		}
		if ops == 0 || r.cmds == nil {
			continue
		}
		names := make([]string, 0, len(r.cmds))
		for k := range r.cmds {
			names = append(names, k)
		}
		sort.Strings(names)
		var parts []string
		var total int64
		for _, k := range names {
			s := r.cmds[k]
			total += s.usec
			parts = append(parts, fmt.Sprintf("%s %.2f/%.1fµs", k, float64(s.calls)/float64(ops), float64(s.usec)/float64(ops)))
		}
		fmt.Fprintf(tw, "%s/%s\ttotal %.1fµs\t%s\n", rowName(r.scenario, r.at), r.label, float64(total)/float64(ops), strings.Join(parts, ", "))
	}
	_ = tw.Flush()
}
