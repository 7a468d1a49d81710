package core

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/relock-go/relock/internal/conn"
	"github.com/relock-go/relock/internal/lease"
	"github.com/relock-go/relock/internal/scripts"
)

// A holder label (WithHolderLabel) lives in scripts.HolderLabel(name,
// holder) with the hold's lease: written after the acquisition, renewed
// with the hold, deleted with its release. It only informs (relock ls, a
// contention error): its failures are not the acquisition's.

// DropLabel deletes holder's label, waiting as AddLabel; a missed one expires.
func DropLabel(ctx context.Context, c conn.Client, name, holder string) {
	labelCall(ctx, c, "del", scripts.HolderLabel(name, holder))
}

// labelCall sends one label command within LabelWait (conn.Within).
func labelCall(ctx context.Context, c conn.Client, args ...any) {
	_ = conn.Within(ctx, conn.PoolFor(c), LabelWait, func(ctx context.Context) error {
		return c.Do(ctx, args...).Err()
	})
}

// Label is a holder's label and since when it holds.
type Label struct {
	Label string
	Since time.Time
}

// Labels reads name's holders' labels in one round trip, within timeout.
func Labels(ctx context.Context, c conn.Client, name string, holders []string, timeout time.Duration) map[string]Label {
	if len(holders) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	gets := make([][]any, len(holders))
	for i, h := range holders {
		gets[i] = []any{"get", scripts.HolderLabel(name, h)}
	}
	out := map[string]Label{}
	for i, r := range c.Pipelined(ctx, gets...) {
		v, err := r.Text() // "<label>\t<since, unix ms>"
		label, ms, ok := strings.Cut(v, "\t")
		if since, perr := strconv.ParseInt(ms, 10, 64); err == nil && ok && perr == nil {
			out[holders[i]] = Label{Label: label, Since: time.UnixMilli(since)}
		}
	}
	return out
}

// MaxHeldBy bounds the holders HeldBy looks up and names.
const MaxHeldBy = 10

// AddLabel records label as holder's, since now, for lease, and has spec
// renew it with the hold: its key follows the target's, renewed by the
// labeled script. It waits at most LabelWait (or ctx's sooner deadline) so
// that a stalled server does not hold the acquisition; a write unanswered
// then may land later.
func AddLabel(ctx context.Context, c conn.Client, spec *lease.Spec, labeled *lease.RenewScript, name, holder, label string, leaseTime time.Duration) {
	t := &spec.Targets[0]
	t.Keys = append(slices.Clone(t.Keys), scripts.HolderLabel(name, holder))
	spec.Renewer = labeled
	v := label + "\t" + strconv.FormatInt(time.Now().UnixMilli(), 10)
	labelCall(ctx, c, "set", scripts.HolderLabel(name, holder), v, "px", max(leaseTime.Milliseconds(), 1))
}

// HeldBy adds to err, a contention error, who holds name when its holders
// (owner ids, the first MaxHeldBy) have labels: "... (held by pod-7 for 4.2s)".
func HeldBy(ctx context.Context, c conn.Client, name string, holders []string, timeout time.Duration, err error) error {
	holders = holders[:min(len(holders), MaxHeldBy)]
	labels := Labels(ctx, c, name, holders, timeout)
	var parts []string
	for _, h := range holders {
		if l, ok := labels[h]; ok {
			parts = append(parts, fmt.Sprintf("%s for %v", l.Label, time.Since(l.Since).Round(100*time.Millisecond)))
		}
	}
	if len(parts) == 0 {
		return err
	}
	return fmt.Errorf("%w (held by %s)", err, strings.Join(parts, ", "))
}

// LabelWait bounds a label's write, delete or read for a contention error:
// labels only inform, and must not hold a caller past its bound.
const LabelWait = 100 * time.Millisecond

// NameHolders returns heldBy(ctx, err) if it answers within LabelWait, else err.
func NameHolders(ctx context.Context, c Client, err error, heldBy func(context.Context, error) error) error {
	named := err
	ctx = context.WithoutCancel(ctx)
	if late := c.workers.Bound(ctx, LabelWait, func() { named = heldBy(ctx, err) }); late != nil {
		return err
	}
	return named
}
