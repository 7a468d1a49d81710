package main

import (
	"math"
	"slices"
	"testing"
	"time"
)

// Over n rounds from a block's start (a multiple of the library count n),
// or over a full period of the steps from any round (goroutine g starts at
// round g), every library takes every position equally often; each round
// is a permutation; the start shifts by one from one round to the next
// within a block of n rounds; and over full periods, with 5 libraries,
// every library directly follows every other one equally often.
func TestIlOrderRotation(t *testing.T) {
	for _, n := range []int{1, 2, 3, 4, 5, 6} {
		steps := ilSteps(n)
		order := make([]int, n)
		period := n * len(steps)
		for _, rounds := range []int{n, period, 3 * period} {
			for _, first := range []int{0, 7} {
				if first%n != 0 && rounds%period != 0 {
					continue // a block cut in two: its rounds are balanced only with the rest of the period
				}
				pos := make([][]int, n) // [library][position]
				for i := range pos {
					pos[i] = make([]int, n)
				}
				follows := map[[2]int]int{}
				for r := first; r < first+rounds; r++ {
					ilOrder(r, order, steps)
					seen := slices.Clone(order)
					slices.Sort(seen)
					for i, x := range seen {
						if x != i {
							t.Fatalf("n=%d round %d: %v is not a permutation", n, r, order)
						}
					}
					if r%n != 0 {
						prev := make([]int, n)
						ilOrder(r-1, prev, steps)
						if order[0] != (prev[0]+1)%n {
							t.Fatalf("n=%d round %d: starts with %d after %d: want a shift by one", n, r, order[0], prev[0])
						}
					}
					for p, lib := range order {
						pos[lib][p]++
						if p > 0 {
							follows[[2]int{order[p-1], lib}]++
						}
					}
				}
				for lib := range pos {
					for p, c := range pos[lib] {
						if c != rounds/n {
							t.Fatalf("n=%d, %d rounds from %d: library %d at position %d %d times, want %d", n, rounds, first, lib, p, c, rounds/n)
						}
					}
				}
				if n != 5 || rounds%period != 0 {
					continue
				}
				for a := range n {
					for b := range n {
						if want := rounds / period * (n - 1); a != b && follows[[2]int{a, b}] != want {
							t.Fatalf("%d rounds: %d follows %d %d times, want %d", rounds, b, a, follows[[2]int{a, b}], want)
						}
					}
				}
			}
		}
	}
}

func TestMedianRange(t *testing.T) {
	for _, c := range []struct {
		xs           []float64
		med, lo, hi  float64
		numbers      int
		printedEmpty bool
	}{
		{xs: []float64{0.9, 0.5, 0.94, 0.7, 0.8}, med: 0.8, lo: 0.5, hi: 0.94, numbers: 5},
		{xs: []float64{4, 1, 3, 2}, med: 2.5, lo: 1, hi: 4, numbers: 4},
		{xs: []float64{math.NaN(), 2, math.Inf(1), 1, 3}, med: 2, lo: 1, hi: 3, numbers: 3},
		{xs: []float64{7}, med: 7, lo: 7, hi: 7, numbers: 1},
		{xs: []float64{math.NaN()}, numbers: 0, printedEmpty: true},
	} {
		s := medianRange(c.xs)
		if s.n != c.numbers {
			t.Fatalf("%v: %d numbers, want %d", c.xs, s.n, c.numbers)
		}
		if c.printedEmpty {
			if s.String() != "-" {
				t.Fatalf("%v: printed %q, want -", c.xs, s.String())
			}
			continue
		}
		if s.med != c.med || s.lo != c.lo || s.hi != c.hi {
			t.Fatalf("%v: %v..%v median %v, want %v..%v median %v", c.xs, s.lo, s.hi, s.med, c.lo, c.hi, c.med)
		}
	}
	if got := medianRange([]float64{0.891, 0.86, 0.9049}).String(); got != "0.89 (0.86..0.90)" {
		t.Fatalf("printed %q", got)
	}
}

// The ratio is taken within each part from the mean pair times: a library
// twice as slow as the floor is 0.5 of it, whatever its pair count.
func TestPartRatios(t *testing.T) {
	us := time.Microsecond
	var cells [ilParts][]ilCell
	floorMean := []time.Duration{100 * us, 200 * us, 100 * us, 50 * us, 100 * us} // the machine drifts
	libFactor := []float64{1.25, 1.25, 2, 1.25, 1}                                // lib's mean / floor's
	for p := range ilParts {
		n := int64(10 + p)
		f := floorMean[p]
		l := time.Duration(float64(f) * libFactor[p])
		cells[p] = []ilCell{
			{n: n, sum: time.Duration(n) * f},
			{n: n + 1, sum: time.Duration(n+1) * l}, // one pair more: the mean counts
		}
	}
	got := partRatios(cells, 1, 0)
	want := []float64{0.8, 0.8, 0.5, 0.8, 1}
	for p := range want {
		if math.Abs(got[p]-want[p]) > 1e-9 {
			t.Fatalf("part %d: ratio %v, want %v (all %v)", p, got[p], want[p], got)
		}
	}
	s := medianRange(got)
	if math.Abs(s.med-0.8) > 1e-9 || math.Abs(s.lo-0.5) > 1e-9 || math.Abs(s.hi-1) > 1e-9 {
		t.Fatalf("median %v (%v..%v), want 0.8 (0.5..1)", s.med, s.lo, s.hi)
	}
	// The other way round: the floor over the library.
	if r := partRatios(cells, 0, 1); math.Abs(r[2]-2) > 1e-9 {
		t.Fatalf("floor / lib in part 2 = %v, want 2", r[2])
	}
	// The difference of the mean pair times: 25, 50, 100, 12.5 and 0 µs.
	d := medianRange(partDiffs(cells, 1, 0))
	if math.Abs(d.med-25e3) > 1e-6 || math.Abs(d.lo) > 1e-6 || math.Abs(d.hi-100e3) > 1e-6 {
		t.Fatalf("difference %v (%v..%v) ns, want 25000 (0..100000)", d.med, d.lo, d.hi)
	}
	if got := d.delta(); got != "+25µs (0..+100µs)" {
		t.Fatalf("difference printed %q", got)
	}
	if got := medianRange(partDiffs(cells, 0, 1)).delta(); got != "-25µs (-100µs..0)" {
		t.Fatalf("negative difference printed %q", got)
	}
	// A part in which a library completed nothing is left out.
	cells[4][1] = ilCell{}
	if s := medianRange(partRatios(cells, 1, 0)); s.n != ilParts-1 || math.Abs(s.med-0.8) > 1e-9 {
		t.Fatalf("with an empty part: %v over %d parts", s.med, s.n)
	}
}
