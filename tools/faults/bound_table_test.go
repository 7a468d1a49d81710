//go:build faults && linux

package faults

import (
	"fmt"
	"strings"
	"time"
)

// boundTable formats the cells as one table, a row per method and a column
// per fault and client setting, each cell its call's wall time and the
// letters of what it broke; it returns the table and how many cells broke
// something.
func boundTable(cells []*boundCell, lasted map[string]time.Duration) (string, int) {
	type key struct{ row, col string }
	byKey := map[key]*boundCell{}
	for _, c := range cells {
		byKey[key{c.prim.label + "." + c.row.method, c.fault + "/" + c.client}] = c
	}
	const rowW, cellW = 24, 11
	var b strings.Builder
	b.WriteString("TestBound: each call's wall time under each fault, with go-redis's default options and with ContextTimeoutEnabled\n")
	fmt.Fprintf(&b, "bound in ms (Do: acquiring+releasing half), plus %v; flags: %s\n", boundSlack, boundLegends)
	fmt.Fprintf(&b, "%-*s %7s", rowW, "call", "bound")
	for _, f := range boundFaults {
		fmt.Fprintf(&b, " | %-*s", 2*cellW+1, f.name)
	}
	fmt.Fprintf(&b, "\n%-*s %7s", rowW, "", "")
	for range boundFaults {
		b.WriteString(" |")
		for _, ck := range boundClients {
			fmt.Fprintf(&b, " %-*s", cellW, ck.name)
		}
	}
	b.WriteString("\n")
	counts := map[byte]int{}
	bad := 0
	for _, p := range boundPrims {
		for _, r := range p.rows {
			label := p.label + "." + r.method
			fmt.Fprintf(&b, "%-*s %7s", rowW, label, r.boundText())
			for _, f := range boundFaults {
				b.WriteString(" |")
				for _, ck := range boundClients {
					c := byKey[key{label, f.name + "/" + ck.name}]
					fmt.Fprintf(&b, " %-*s", cellW, c.text())
					if c != nil && len(c.flags) > 0 {
						bad++
						for _, fl := range c.flags {
							counts[fl]++
						}
					}
				}
			}
			b.WriteString("\n")
		}
	}
	b.WriteString("fault lasted:")
	for _, f := range boundFaults {
		fmt.Fprintf(&b, " %s %v", f.name, lasted[f.name].Round(time.Millisecond))
	}
	fmt.Fprintf(&b, "\ncells that broke a promise: %d of %d (", bad, len(cells))
	for i, fl := range []byte{flagOverrun, flagUnnamed, flagOutcome, flagLeft, flagHung, flagSetup} {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%c %d", fl, counts[fl])
	}
	b.WriteString(")\n")
	return b.String(), bad
}

// text is the cell as the table shows it.
func (c *boundCell) text() string {
	switch {
	case c == nil:
		return "-"
	case c.setupErr != nil:
		return "setup " + string(c.flags)
	case c.hung:
		return "hung " + string(c.flags)
	}
	return strings.TrimSpace(shortDuration(c.took) + " " + string(c.flags))
}

// shortDuration prints d in at most six characters.
func shortDuration(d time.Duration) string {
	switch {
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < 10*time.Second:
		return fmt.Sprintf("%.2fs", d.Seconds())
	default:
		return fmt.Sprintf("%.1fs", d.Seconds())
	}
}
