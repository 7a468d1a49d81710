package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/relock-go/relock/cmd/relock/internal/inspect"
)

func (a *App) printJSON(v any) error {
	enc := json.NewEncoder(a.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// id is s, a name, key or id read from Redis, as the table and the
// prompt show it: rewritten by ID, then escaped (shown).
func (a *App) id(s string) string {
	if a.ID != nil {
		s = a.ID(s)
	}
	return shown(s)
}

// shown is s as it is when every character is printable and none is a
// space, a quote or a backslash; else s in Go's %q form. The library
// accepts any name, and a raw one could colour or clear the operator's
// terminal, or split a row; a name shown as it is never starts with a
// quote, so a quoted one cannot be mistaken for it.
func shown(s string) string {
	if q := strconv.Quote(s); q[1:len(q)-1] != s || strings.ContainsRune(s, ' ') {
		return q
	}
	return s
}

// ttl formats a TTL or lease in ms: "none" without TTL, "expired" at or
// below 0.
func (a *App) ttl(ms int64) string {
	switch {
	case ms == inspect.NoTTL:
		return "none"
	case ms <= 0:
		return "expired"
	case a.TTL != nil:
		return a.TTL(ms)
	}
	return FormatTTL(ms)
}

// FormatTTL formats a positive duration in ms: to the millisecond below a
// second, to 0.1 s below a minute, to the second above.
func FormatTTL(ms int64) string {
	d := time.Duration(ms) * time.Millisecond
	switch {
	case d < time.Second:
		return d.String()
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

func state(e inspect.Entry) string {
	switch e.Kind {
	case inspect.KindRWLock:
		return shown(*e.Mode)
	case inspect.KindSemaphore:
		return fmt.Sprintf("%d/%d used", *e.Used, *e.Size)
	}
	return "held"
}

func optInt(p *int64) string {
	if p == nil {
		return "-"
	}
	return strconv.FormatInt(*p, 10)
}

func newTable(w io.Writer) *tabwriter.Writer { return tabwriter.NewWriter(w, 0, 8, 2, ' ', 0) }

func (a *App) ls(ctx context.Context, in *inspect.Inspector, pattern string, asJSON bool) error {
	es, err := in.List(ctx, pattern)
	if err != nil {
		return err
	}
	if asJSON {
		return a.printJSON(es)
	}
	if len(es) == 0 {
		fmt.Fprintf(a.Stdout, "no locks, rwlocks or semaphores match %q\n", pattern)
		return nil
	}
	tw := newTable(a.Stdout)
	fmt.Fprintln(tw, "NAME\tKIND\tSTATE\tTTL\tTOKEN\tWAITERS\tHOLDER\tSIDE\tCOUNT\tLEASE\tLABEL")
	for _, e := range es {
		head := fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%d", a.id(e.Name), e.Kind, state(e), a.ttl(e.TTLMs), optInt(e.FencingToken), len(e.Waiters))
		if len(e.Holders) == 0 {
			fmt.Fprintf(tw, "%s\t-\t\t\t\n", head)
		}
		for i, h := range e.Holders {
			if i > 0 {
				head = "\t\t\t\t\t"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", head, a.id(h.ID), h.Side, h.Count, a.ttl(h.LeaseMs), shown(orDash(h.Label)))
		}
	}
	return tw.Flush()
}

func (a *App) show(ctx context.Context, in *inspect.Inspector, name string, asJSON bool) error {
	d, err := in.Show(ctx, name)
	if err != nil {
		return err
	}
	if asJSON {
		return a.printJSON(d)
	}
	tw := newTable(a.Stdout)
	fmt.Fprintf(tw, "name:\t%s\n", a.id(d.Name))
	fmt.Fprintf(tw, "kind:\t%s\n", d.Kind)
	fmt.Fprintf(tw, "state:\t%s\n", state(d.Entry))
	fmt.Fprintf(tw, "ttl:\t%s\n", a.ttl(d.TTLMs))
	if d.Kind != inspect.KindSemaphore {
		fmt.Fprintf(tw, "fencing token:\t%s\n", optInt(d.FencingToken))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(a.Stdout, "\nholders (%d):\n", len(d.Holders))
	if len(d.Holders) > 0 {
		tw = newTable(a.Stdout)
		fmt.Fprintln(tw, "  HOLDER\tSIDE\tCOUNT\tLEASE\tLABEL")
		for _, h := range d.Holders {
			lease := a.ttl(h.LeaseMs)
			if h.Expired {
				lease = "expired (dead owner)"
			}
			fmt.Fprintf(tw, "  %s\t%s\t%d\t%s\t%s\n", a.id(h.ID), h.Side, h.Count, lease, shown(orDash(h.Label)))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	fmt.Fprintf(a.Stdout, "\nwaiters (%d):\n", len(d.Waiters))
	if len(d.Waiters) > 0 {
		tw = newTable(a.Stdout)
		fmt.Fprintln(tw, "  WAITER\tMARK")
		for _, w := range d.Waiters {
			fmt.Fprintf(tw, "  %s\t%s\n", a.id(w.ID), a.ttl(w.MarkMs))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	fmt.Fprintf(a.Stdout, "\nkeys (%d):\n", len(d.Keys))
	tw = newTable(a.Stdout)
	fmt.Fprintln(tw, "  KEY\tTYPE\tTTL")
	for _, k := range d.Keys {
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", a.id(k.Key), k.Type, a.ttl(k.TTLMs))
	}
	return tw.Flush()
}

func (a *App) leaks(ctx context.Context, in *inspect.Inspector, pattern string, asJSON bool) error {
	rep, err := in.Leaks(ctx, pattern)
	if err != nil {
		return err
	}
	if asJSON {
		if err := a.printJSON(rep); err != nil {
			return err
		}
	} else {
		if len(rep.Findings) == 0 {
			fmt.Fprintln(a.Stdout, "no leaks found")
		} else {
			tw := newTable(a.Stdout)
			fmt.Fprintln(tw, "KEY\tPROBLEM\tHOLDER\tDETAIL")
			for _, f := range rep.Findings {
				h := f.Holder
				if h == "" {
					h = "-"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", a.id(f.Key), f.Problem, a.id(h), f.Detail)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			fmt.Fprintf(a.Stdout, "%d leak(s) found\n", len(rep.Findings))
		}
		fmt.Fprintf(a.Stdout, "%d key(s) of ours checked; each must expire within %g h\n", rep.Keys, inspect.MaxTTL.Hours())
	}
	if len(rep.Findings) > 0 {
		return errLeaks
	}
	return nil
}

// orDash is s, or "-" when it is empty.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// holdersText lists e's holders for the confirmation prompt.
func (a *App) holdersText(e inspect.Entry) string {
	if len(e.Holders) == 0 {
		return "nobody"
	}
	parts := make([]string, len(e.Holders))
	for i, h := range e.Holders {
		parts[i] = fmt.Sprintf("%s (%s x%d)", a.id(h.ID), h.Side, h.Count)
	}
	return strings.Join(parts, ", ")
}

// unlockResult is unlock's JSON output.
type unlockResult struct {
	Name     string   `json:"name"`
	Kind     string   `json:"kind"`
	Released bool     `json:"released"`
	Channel  string   `json:"channel"`
	Holders  []string `json:"holders"`
}

func (a *App) unlock(ctx context.Context, in *inspect.Inspector, name string, yes, asJSON bool) error {
	e, err := in.Get(ctx, name)
	if err != nil {
		return err
	}
	if !yes {
		if !a.Interactive {
			return fmt.Errorf("refusing to force-unlock %s %q without --yes: stdin is not a terminal", e.Kind, name)
		}
		fmt.Fprintf(a.Stderr, "Force-unlock %s %q held by %s? [y/N] ", e.Kind, name, a.holdersText(e))
		line, err := bufio.NewReader(a.Stdin).ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("read confirmation: %w", err)
		}
		switch strings.ToLower(strings.TrimSpace(line)) {
		case "y", "yes":
		default:
			return fmt.Errorf("not confirmed: %s %q left as it is", e.Kind, name)
		}
	}
	released, err := in.ForceUnlock(ctx, e)
	if err != nil {
		return err
	}
	ch := inspect.Channel(e)
	if asJSON {
		r := unlockResult{Name: name, Kind: e.Kind, Released: released, Channel: ch, Holders: []string{}}
		for _, h := range e.Holders {
			r.Holders = append(r.Holders, h.ID)
		}
		return a.printJSON(r)
	}
	if !released {
		fmt.Fprintf(a.Stdout, "%s %q was already released\n", e.Kind, name)
		return nil
	}
	what := "deleted"
	if e.Kind == inspect.KindSemaphore {
		what = "permits deleted, size record kept"
	}
	fmt.Fprintf(a.Stdout, "force-unlocked %s %q (%s; waiters woken on %s)\n", e.Kind, name, what, ch)
	return nil
}
