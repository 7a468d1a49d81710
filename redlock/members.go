package redlock

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// memberErrors are the outcomes of the members that failed a round or a
// release, read as one line: members with the same outcome and cause are
// grouped ("members 0,2,4: held by another owner"), and a member's address
// is named only where its own failure asks for it (an error, a timeout).
// errors.Is and errors.As see each NodeError.
type memberErrors []*NodeError

func (m memberErrors) Error() string {
	type group struct {
		idx  []string
		text string
	}
	var groups []*group
	byText := map[string]*group{}
	for _, e := range m {
		text := e.Outcome
		if e.Err != nil {
			text += ": " + e.Err.Error()
		}
		g := byText[text]
		if g == nil {
			g = &group{text: text}
			byText[text] = g
			groups = append(groups, g)
		}
		id := strconv.Itoa(e.Index)
		if e.Err != nil && !errors.Is(e.Err, context.Canceled) { // the caller's end needs no address
			id += " (" + e.Node + ")"
		}
		g.idx = append(g.idx, id)
	}
	parts := make([]string, len(groups))
	for i, g := range groups {
		noun := "member "
		if len(g.idx) > 1 {
			noun = "members "
		}
		parts[i] = noun + strings.Join(g.idx, ",") + ": " + g.text
	}
	return strings.Join(parts, "; ")
}

// Unwrap returns each member's error.
func (m memberErrors) Unwrap() []error {
	out := make([]error, len(m))
	for i, e := range m {
		out[i] = e
	}
	return out
}

// endedBy reports whether every member failed for the end of ctx (its
// cancellation, or its cause), which the caller reports once itself.
func (m memberErrors) endedBy(ctx context.Context) bool {
	if ctx.Err() == nil || len(m) == 0 {
		return false
	}
	for _, e := range m {
		if e.Outcome == OutcomeHeld || e.Err == nil || !(isContextEnd(e.Err) || errors.Is(e.Err, context.Cause(ctx))) {
			return false
		}
	}
	return true
}

func isContextEnd(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// notAcquired is the error of a round that did not win the quorum.
func (l *Lock) notAcquired(won int, failed memberErrors, extra string) error {
	msg := fmt.Sprintf("won %d of %d members, quorum %d", won, len(l.nodes), l.quorum)
	if extra != "" {
		msg += ", " + extra
	}
	if len(failed) == 0 {
		return fmt.Errorf("%w: %s", ErrNotAcquired, msg)
	}
	return fmt.Errorf("%w: %s: %w", ErrNotAcquired, msg, failed)
}
