package redlock

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// memberErrors are the failed members of a round or release as one line,
// grouped by outcome and cause ("members 0,2,4: held by another owner");
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

// endedBy reports whether every member failed for the caller's
// cancellation of ctx, which the caller then reports once. A deadline does
// not count: a member's node timeout ends alike, and its detail must stay.
func (m memberErrors) endedBy(ctx context.Context) bool {
	cause := context.Cause(ctx)
	if ctx.Err() == nil || len(m) == 0 || errors.Is(cause, context.DeadlineExceeded) {
		return false
	}
	for _, e := range m {
		if e.Outcome == OutcomeHeld || e.Err == nil || !(errors.Is(e.Err, context.Canceled) || errors.Is(e.Err, cause)) {
			return false
		}
	}
	return true
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
