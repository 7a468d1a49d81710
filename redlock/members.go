package redlock

import (
	"context"
	"errors"
	"strconv"
	"strings"
)

// memberErrors are the failed members of a round or release as one line,
// grouped by outcome and cause ("members 0,2,4: held by another owner");
// errors.Is and errors.As see each NodeError.
type memberErrors []*NodeError

func (m memberErrors) Error() string {
	var texts []string // in order of first appearance
	ids := map[string][]string{}
	for _, e := range m {
		text := e.Outcome
		if e.Err != nil {
			text += ": " + e.Err.Error()
		}
		if ids[text] == nil {
			texts = append(texts, text)
		}
		id := strconv.Itoa(e.Index)
		if e.Err != nil && !errors.Is(e.Err, context.Canceled) { // the caller's end needs no address
			id += " (" + e.Node + ")"
		}
		ids[text] = append(ids[text], id)
	}
	for i, text := range texts {
		noun := "member "
		if len(ids[text]) > 1 {
			noun = "members "
		}
		texts[i] = noun + strings.Join(ids[text], ",") + ": " + text
	}
	return strings.Join(texts, "; ")
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
