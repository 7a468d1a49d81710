package history_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/testkit/history"
)

// t0 is the origin of the hand-made histories; at(ms) an instant after it.
var t0 = time.Now()

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

func ex(lock, owner string, from, to int, token int64) history.Hold {
	return history.Hold{Lock: lock, Owner: owner, Kind: history.Exclusive, Acquired: at(from), Released: at(to), Token: token, HasToken: token != 0}
}

func sh(lock, owner string, from, to int, token int64) history.Hold {
	h := ex(lock, owner, from, to, token)
	h.Kind = history.Shared
	return h
}

func pm(lock string, n, size int64, from, to int) history.Hold {
	return history.Hold{Lock: lock, Kind: history.Permits, N: n, Size: size, Acquired: at(from), Released: at(to)}
}

func record(holds ...history.Hold) *history.History {
	h := history.New()
	for _, hd := range holds {
		h.Add(hd)
	}
	return h
}

func problems(vs []history.Violation) []history.Problem {
	var ps []history.Problem
	for _, v := range vs {
		ps = append(ps, v.Problem)
	}
	return ps
}

func TestHistoryConsistentRecords(t *testing.T) {
	cases := map[string][]history.Hold{
		"empty": nil,
		"exclusive one after another, touching": {
			ex("a", "o1", 0, 10, 1), ex("a", "o2", 10, 20, 2), ex("a", "o1", 25, 30, 5),
		},
		"re-entry nests inside its owner's hold": {
			ex("a", "o1", 0, 100, 1), ex("a", "o1", 10, 50, 2), ex("a", "o1", 20, 30, 3), ex("a", "o2", 100, 110, 4),
		},
		"readers share and their tokens are unordered": {
			ex("a", "w", 0, 10, 1), sh("a", "r1", 12, 40, 3), sh("a", "r2", 15, 30, 2), sh("a", "r3", 20, 50, 4), ex("a", "w", 50, 60, 5),
		},
		"writer takes the read lock and keeps it after its write lock (downgrade)": {
			ex("a", "w", 0, 10, 1), sh("a", "w", 5, 20, 2), sh("a", "r", 12, 30, 3), ex("a", "x", 30, 40, 4),
		},
		"different locks are independent": {
			ex("a", "o1", 0, 10, 5), ex("b", "o2", 0, 10, 1), sh("b2", "o3", 0, 10, 1),
		},
		"holds without tokens are not ordered": {
			ex("a", "o1", 0, 10, 0), ex("a", "o2", 10, 20, 0),
		},
		"semaphore exactly full": {
			pm("s", 2, 3, 0, 10), pm("s", 1, 3, 5, 15), pm("s", 2, 3, 10, 20), pm("s", 1, 3, 15, 20), pm("s", 3, 3, 20, 30),
		},
		"empty interval overlaps nothing": {
			ex("a", "o1", 0, 10, 1), ex("a", "o2", 5, 5, 2), ex("a", "o3", 10, 20, 3),
		},
	}
	for name, holds := range cases {
		t.Run(name, func(t *testing.T) {
			h := record(holds...)
			require.Empty(t, h.Check())
			require.NoError(t, h.Err())
			require.Equal(t, len(holds), h.Len())
		})
	}
}

func TestHistoryFindsEachViolation(t *testing.T) {
	cases := []struct {
		name  string
		holds []history.Hold
		want  []history.Problem
	}{
		{"two exclusive owners overlap", []history.Hold{ex("a", "o1", 0, 10, 1), ex("a", "o2", 9, 20, 2)},
			[]history.Problem{history.Overlap}},
		{"holds without owner are distinct owners", []history.Hold{ex("a", "", 0, 10, 0), ex("a", "", 5, 6, 0)},
			[]history.Problem{history.Overlap}},
		{"exclusive inside another exclusive, no token", []history.Hold{ex("a", "o1", 0, 100, 0), ex("a", "o2", 40, 50, 0)},
			[]history.Problem{history.Overlap}},
		{"writer overlaps a reader", []history.Hold{sh("a", "r", 0, 10, 0), ex("a", "w", 5, 20, 0)},
			[]history.Problem{history.ExclusiveShared}},
		{"reader starts inside a writer", []history.Hold{ex("a", "w", 0, 10, 0), sh("a", "r", 5, 20, 0)},
			[]history.Problem{history.ExclusiveShared}},
		{"permits above size", []history.Hold{pm("s", 2, 3, 0, 10), pm("s", 2, 3, 5, 15)},
			[]history.Problem{history.OverCapacity}},
		{"one hold larger than the size", []history.Hold{pm("s", 4, 3, 0, 10)},
			[]history.Problem{history.OverCapacity}},
		{"two excursions above size", []history.Hold{pm("s", 1, 1, 0, 10), pm("s", 1, 1, 5, 7), pm("s", 1, 1, 20, 30), pm("s", 1, 1, 25, 26)},
			[]history.Problem{history.OverCapacity, history.OverCapacity}},
		{"exclusive tokens decrease", []history.Hold{ex("a", "o1", 0, 10, 7), ex("a", "o2", 10, 20, 3)},
			[]history.Problem{history.TokenOrder}},
		{"exclusive tokens repeat", []history.Hold{ex("a", "o1", 0, 10, 7), ex("a", "o2", 10, 20, 7)},
			[]history.Problem{history.TokenOrder}},
		{"re-entry with an older token", []history.Hold{ex("a", "o1", 0, 100, 5), ex("a", "o1", 10, 20, 4)},
			[]history.Problem{history.TokenOrder}},
		{"reader's token below an earlier writer's", []history.Hold{ex("a", "w", 0, 10, 5), sh("a", "r", 20, 30, 4)},
			[]history.Problem{history.TokenOrder}},
		{"reader's token above a later writer's", []history.Hold{sh("a", "r", 0, 10, 6), ex("a", "w", 20, 30, 5)},
			[]history.Problem{history.TokenOrder}},
		{"released before acquired", []history.Hold{ex("a", "o1", 10, 0, 1)},
			[]history.Problem{history.Malformed}},
		{"unknown kind", []history.Hold{{Lock: "a", Acquired: at(0), Released: at(1)}},
			[]history.Problem{history.Malformed}},
		{"zero permits", []history.Hold{pm("s", 0, 3, 0, 10)},
			[]history.Problem{history.Malformed}},
		{"sizes differ", []history.Hold{pm("s", 1, 3, 0, 10), pm("s", 1, 4, 20, 30)},
			[]history.Problem{history.Malformed}},
		{"both lock and semaphore", []history.Hold{pm("s", 1, 3, 0, 10), ex("s", "o", 20, 30, 0)},
			[]history.Problem{history.Malformed}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := record(c.holds...)
			vs := h.Check()
			require.Equal(t, c.want, problems(vs), "violations: %v", vs)
			for _, v := range vs {
				require.Equal(t, c.holds[0].Lock, v.Lock)
				require.NotEmpty(t, v.String())
			}
			err := h.Err()
			require.Error(t, err)
			require.Contains(t, err.Error(), c.want[0].String())
		})
	}
}

// A violation names the holds involved, in acquisition order, so a test
// failure shows what overlapped with what.
func TestHistoryViolationNamesTheHolds(t *testing.T) {
	a, b, c := ex("a", "o1", 0, 10, 1), ex("a", "o2", 5, 20, 2), sh("x", "r", 0, 1, 0)
	vs := record(b, c, a).Check()
	require.Len(t, vs, 1)
	require.Equal(t, []history.Hold{a, b}, vs[0].Holds)
	require.Contains(t, vs[0].String(), `owner o2 token 2`)
}

func TestHistoryCapsReportsPerLock(t *testing.T) {
	// 60 holds all overlapping one long hold: 60 violations, of which a
	// readable number is listed and the rest counted.
	holds := []history.Hold{ex("a", "long", 0, 1000, 0)}
	for i := range 60 {
		holds = append(holds, ex("a", fmt.Sprint("o", i), 10+10*i, 15+10*i, 0))
	}
	vs := record(holds...).Check()
	require.Len(t, vs, 21)
	require.Equal(t, "40 more not listed", vs[20].Detail)
	for _, v := range vs {
		require.Equal(t, history.Overlap, v.Problem)
	}
}

func TestHistoryConcurrentAdd(t *testing.T) {
	h := history.New()
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 500 {
				start := time.Now()
				h.Add(history.Hold{Lock: fmt.Sprint("l", g), Owner: "o", Kind: history.Exclusive,
					Acquired: start, Released: start.Add(time.Nanosecond), Token: int64(i + 1), HasToken: true})
			}
		})
	}
	wg.Wait()
	require.Equal(t, 8*500, h.Len())
	// One owner per lock, sequential per goroutine: consistent, but the
	// holds of one owner may overlap in recorded time (same instant),
	// which is re-entry, not a violation.
	require.Empty(t, h.Check())
}

func TestHistoryStrings(t *testing.T) {
	require.Equal(t, "Kind(9)", history.Kind(9).String())
	require.Equal(t, "Problem(9)", history.Problem(9).String())
	s := pm("s", 2, 3, 0, 10).String()
	require.True(t, strings.HasPrefix(s, `permits "s" 2/3 [`), s)
}
