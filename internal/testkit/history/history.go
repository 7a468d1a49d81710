package history

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// Kind is how a hold holds its lock.
type Kind uint8

const (
	// Exclusive: a mutex, a write lock, a Redlock.
	Exclusive Kind = iota + 1
	// Shared: a read lock.
	Shared
	// Permits: N of Size permits of a semaphore.
	Permits
)

// String names the kind as the reports print it.
func (k Kind) String() string {
	switch k {
	case Exclusive:
		return "exclusive"
	case Shared:
		return "shared"
	case Permits:
		return "permits"
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// Hold is one client-side hold: [Acquired, Released).
type Hold struct {
	Lock  string
	Owner string // holds of one owner may overlap (re-entry, downgrade); "" is a distinct owner
	Kind  Kind
	// N of Size permits, for Permits.
	N, Size int64
	// Token is the fencing token, when HasToken.
	Token    int64
	HasToken bool
	// Acquired is read after the acquire returned, Released before the
	// release is called. Times from time.Now keep their monotonic reading,
	// which is what they are compared by.
	Acquired, Released time.Time
}

// String describes the hold in one line, for reports.
func (h Hold) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %q", h.Kind, h.Lock)
	if h.Kind == Permits {
		fmt.Fprintf(&b, " %d/%d", h.N, h.Size)
	}
	if h.Owner != "" {
		fmt.Fprintf(&b, " owner %s", h.Owner)
	}
	if h.HasToken {
		fmt.Fprintf(&b, " token %d", h.Token)
	}
	fmt.Fprintf(&b, " [%s, %s)", clock(h.Acquired), clock(h.Released))
	return b.String()
}

func clock(t time.Time) string { return t.Format("15:04:05.000000") }

// Problem is the kind of a violation.
type Problem uint8

const (
	// Overlap: two exclusive holds of different owners overlap.
	Overlap Problem = iota + 1
	// ExclusiveShared: an exclusive hold overlaps another owner's shared hold.
	ExclusiveShared
	// OverCapacity: more permits in use than the semaphore's size.
	OverCapacity
	// TokenOrder: fencing tokens out of order (see the package doc).
	TokenOrder
	// Malformed: a record that cannot be right whatever the lock did.
	Malformed
)

// String names the problem as the reports print it.
func (p Problem) String() string {
	switch p {
	case Overlap:
		return "exclusive holds overlap"
	case ExclusiveShared:
		return "exclusive hold overlaps a shared hold"
	case OverCapacity:
		return "permits over capacity"
	case TokenOrder:
		return "fencing tokens out of order"
	case Malformed:
		return "malformed record"
	}
	return fmt.Sprintf("Problem(%d)", uint8(p))
}

// Violation is one thing Check found.
type Violation struct {
	Problem Problem
	Lock    string
	Holds   []Hold // the holds involved
	Detail  string
}

// String describes the violation and the holds involved, for reports.
func (v Violation) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s on %q", v.Problem, v.Lock)
	if v.Detail != "" {
		b.WriteString(": " + v.Detail)
	}
	for _, h := range v.Holds {
		b.WriteString("\n\t" + h.String())
	}
	return b.String()
}

// maxPerLock bounds the violations reported per lock and problem, so a
// badly broken run prints a readable report, not millions of pairs.
const maxPerLock = 20

// History is a record of holds. The zero value is ready to use.
type History struct {
	mu    sync.Mutex
	holds []Hold
}

// New returns an empty History.
func New() *History { return &History{} }

// Add records a hold.
func (h *History) Add(hold Hold) {
	h.mu.Lock()
	h.holds = append(h.holds, hold)
	h.mu.Unlock()
}

// Len is the number of holds recorded.
func (h *History) Len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.holds)
}

// Holds returns a copy of the record.
func (h *History) Holds() []Hold {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.holds)
}

// Check returns every violation in the record (at most a few per lock and
// problem), ordered by lock name; none means the record is consistent.
func (h *History) Check() []Violation {
	byLock := make(map[string][]Hold)
	for _, hd := range h.Holds() {
		byLock[hd.Lock] = append(byLock[hd.Lock], hd)
	}
	names := make([]string, 0, len(byLock))
	for name := range byLock {
		names = append(names, name)
	}
	slices.Sort(names)
	var out []Violation
	for _, name := range names {
		out = append(out, checkLock(name, byLock[name])...)
	}
	return out
}

// Err is Check as an error: nil when there is no violation, else one that
// lists them.
func (h *History) Err() error {
	vs := h.Check()
	if len(vs) == 0 {
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "history: %d violation(s):", len(vs))
	for _, v := range vs {
		b.WriteString("\n" + v.String())
	}
	return fmt.Errorf("%s", b.String())
}

func checkLock(name string, holds []Hold) []Violation {
	var out []Violation
	malformed := func(detail string, hs ...Hold) {
		out = append(out, Violation{Problem: Malformed, Lock: name, Holds: hs, Detail: detail})
	}
	// Records that cannot take part in the sweeps are reported and left out.
	valid := holds[:0:0]
	var kinds [Permits + 1]int
	var sized *Hold
	for i := range holds {
		hd := holds[i]
		switch {
		case hd.Kind < Exclusive || hd.Kind > Permits:
			malformed("unknown kind", hd)
			continue
		case hd.Released.Before(hd.Acquired):
			malformed("released before acquired", hd)
			continue
		case hd.Kind == Permits && (hd.N < 1 || hd.Size < 1):
			malformed("permits and size must be at least 1", hd)
			continue
		case hd.Kind == Permits && sized != nil && hd.Size != sized.Size:
			malformed("holds of one semaphore recorded with different sizes", *sized, hd)
			continue
		}
		if hd.Kind == Permits && sized == nil {
			sized = &holds[i]
		}
		kinds[hd.Kind]++
		valid = append(valid, hd)
	}
	if kinds[Permits] > 0 && kinds[Exclusive]+kinds[Shared] > 0 {
		malformed(fmt.Sprintf("recorded both as a semaphore (%d holds) and as a lock (%d holds)",
			kinds[Permits], kinds[Exclusive]+kinds[Shared]))
		return out
	}
	if kinds[Permits] > 0 {
		return append(out, checkPermits(name, valid)...)
	}
	out = append(out, checkExclusion(name, valid)...)
	return append(out, checkTokens(name, valid)...)
}

// event is an end of a hold in a sweep; at one instant releases come
// first, since intervals are half-open.
type event struct {
	at      time.Time
	release bool
	i       int
}

func sweep(holds []Hold) []event {
	ev := make([]event, 0, 2*len(holds))
	for i, hd := range holds {
		if !hd.Acquired.Before(hd.Released) {
			continue // empty: overlaps nothing, and its release would sort before its acquire
		}
		ev = append(ev, event{hd.Acquired, false, i}, event{hd.Released, true, i})
	}
	slices.SortStableFunc(ev, func(a, b event) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		switch {
		case a.release == b.release:
			return 0
		case a.release:
			return -1
		}
		return 1
	})
	return ev
}

// checkExclusion finds exclusive holds overlapping other owners' holds.
func checkExclusion(name string, holds []Hold) []Violation {
	var out []Violation
	reported := map[Problem]int{}
	active := map[int]bool{}
	for _, e := range sweep(holds) {
		if e.release {
			delete(active, e.i)
			continue
		}
		x := holds[e.i]
		for j := range active {
			y := holds[j]
			if x.Kind == Shared && y.Kind == Shared || sameOwner(x, y) {
				continue
			}
			p := Overlap
			if x.Kind != y.Kind {
				p = ExclusiveShared
			}
			if reported[p]++; reported[p] <= maxPerLock {
				out = append(out, Violation{Problem: p, Lock: name, Holds: ordered(y, x)})
			}
		}
		active[e.i] = true
	}
	return append(out, suppressed(name, reported)...)
}

func sameOwner(a, b Hold) bool { return a.Owner != "" && a.Owner == b.Owner }

func ordered(a, b Hold) []Hold {
	if b.Acquired.Before(a.Acquired) {
		return []Hold{b, a}
	}
	return []Hold{a, b}
}

func suppressed(name string, reported map[Problem]int) []Violation {
	var out []Violation
	for _, p := range []Problem{Overlap, ExclusiveShared, OverCapacity, TokenOrder} {
		if n := reported[p]; n > maxPerLock {
			out = append(out, Violation{Problem: p, Lock: name,
				Detail: fmt.Sprintf("%d more not listed", n-maxPerLock)})
		}
	}
	return out
}

// checkPermits finds the instants at which more permits are in use than
// the size: one violation per excursion above it, with the holds in use
// at its peak.
func checkPermits(name string, holds []Hold) []Violation {
	var out []Violation
	reported := map[Problem]int{}
	active := map[int]bool{}
	var used int64
	var peak []Hold
	var peakUsed int64
	flush := func() {
		if peak == nil {
			return
		}
		if reported[OverCapacity]++; reported[OverCapacity] <= maxPerLock {
			slices.SortFunc(peak, func(a, b Hold) int { return a.Acquired.Compare(b.Acquired) })
			out = append(out, Violation{Problem: OverCapacity, Lock: name, Holds: peak,
				Detail: fmt.Sprintf("%d permits in use, size %d", peakUsed, peak[0].Size)})
		}
		peak, peakUsed = nil, 0
	}
	for _, e := range sweep(holds) {
		hd := holds[e.i]
		if e.release {
			delete(active, e.i)
			used -= hd.N
			if used <= hd.Size {
				flush()
			}
			continue
		}
		active[e.i] = true
		used += hd.N
		if used > hd.Size && used > peakUsed {
			peakUsed = used
			peak = peak[:0]
			for j := range active {
				peak = append(peak, holds[j])
			}
		}
	}
	flush()
	return append(out, suppressed(name, reported)...)
}

// checkTokens checks fencing-token order as the package doc states it.
func checkTokens(name string, holds []Hold) []Violation {
	var out []Violation
	reported := map[Problem]int{}
	bad := func(detail string, hs ...Hold) {
		if reported[TokenOrder]++; reported[TokenOrder] <= maxPerLock {
			out = append(out, Violation{Problem: TokenOrder, Lock: name, Holds: hs, Detail: detail})
		}
	}
	var ex, sh []Hold
	for _, hd := range holds {
		switch {
		case !hd.HasToken:
		case hd.Kind == Exclusive:
			ex = append(ex, hd)
		case hd.Kind == Shared:
			sh = append(sh, hd)
		}
	}
	// Exclusive holds in acquisition order: strictly increasing.
	slices.SortStableFunc(ex, func(a, b Hold) int { return a.Acquired.Compare(b.Acquired) })
	for i := 1; i < len(ex); i++ {
		if ex[i].Token <= ex[i-1].Token {
			bad("a later exclusive acquisition has a token not above the earlier one's", ex[i-1], ex[i])
		}
	}
	if len(sh) == 0 || len(ex) == 0 {
		return append(out, suppressed(name, reported)...)
	}
	// For a shared hold S: the exclusive hold with the largest token among
	// those released by S.Acquired, and the one with the smallest token
	// among those acquired from S.Released on.
	byRelease := slices.Clone(ex)
	slices.SortStableFunc(byRelease, func(a, b Hold) int { return a.Released.Compare(b.Released) })
	maxBefore := make([]int, len(byRelease)) // index of the largest token in byRelease[:i+1]
	for i := range byRelease {
		maxBefore[i] = i
		if i > 0 && byRelease[maxBefore[i-1]].Token >= byRelease[i].Token {
			maxBefore[i] = maxBefore[i-1]
		}
	}
	minAfter := make([]int, len(ex)) // index of the smallest token in ex[i:], ex by acquisition
	for i := len(ex) - 1; i >= 0; i-- {
		minAfter[i] = i
		if i < len(ex)-1 && ex[minAfter[i+1]].Token <= ex[i].Token {
			minAfter[i] = minAfter[i+1]
		}
	}
	for _, s := range sh {
		// byRelease[:k] were released at or before s.Acquired.
		k := sort.Search(len(byRelease), func(i int) bool { return byRelease[i].Released.After(s.Acquired) })
		if k > 0 {
			if e := byRelease[maxBefore[k-1]]; e.Token >= s.Token {
				bad("a shared hold's token is not above that of an exclusive hold released before it", e, s)
			}
		}
		// ex[k:] were acquired at or after s.Released.
		k = sort.Search(len(ex), func(i int) bool { return !ex[i].Acquired.Before(s.Released) })
		if k < len(ex) {
			if e := ex[minAfter[k]]; e.Token <= s.Token {
				bad("a shared hold's token is not below that of an exclusive hold acquired after it", s, e)
			}
		}
	}
	return append(out, suppressed(name, reported)...)
}
