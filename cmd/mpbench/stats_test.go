package main

import (
	"math"
	"slices"
	"testing"
)

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		in   []float64
		want float64
	}{
		{[]float64{3}, 3},
		{[]float64{1, 2, 3}, 2},
		{[]float64{1, 2, 3, 4}, 2.5},
		{[]float64{1, 1, 100}, 1},
		{[]float64{0.5, 0.5}, 0.5},
	} {
		if got := median(tc.in); got != tc.want {
			t.Errorf("median(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
	if got := median(nil); !math.IsNaN(got) {
		t.Errorf("median(nil) = %v, want NaN", got)
	}
}

func TestSummarize(t *testing.T) {
	in := []float64{5, 1, 4, 2, 3}
	orig := slices.Clone(in)
	s := summarize(in)
	if s != (summary{Median: 3, Min: 1, Max: 5, N: 5}) {
		t.Errorf("summarize(%v) = %+v", orig, s)
	}
	if !slices.Equal(in, orig) {
		t.Errorf("summarize sorted its argument: %v", in)
	}
	if z := summarize(nil); z != (summary{}) || z.valid() || z.noisy() {
		t.Errorf("summarize(nil) = %+v, valid %v, noisy %v", z, z.valid(), z.noisy())
	}
}

func TestNoisy(t *testing.T) {
	for _, tc := range []struct {
		xs     []float64
		spread float64
		noisy  bool
	}{
		{[]float64{10, 10, 10}, 0, false},
		{[]float64{9, 10, 11}, 0.2, false}, // exactly 20%: not above
		{[]float64{9, 10, 11.1}, 0.21, true},
		{[]float64{1, 10, 10, 10, 10}, 0.9, true}, // one outlier is enough
		{[]float64{0, 0}, 0, false},               // nothing measured (0-byte bandwidth)
		{[]float64{7}, 0, false},                  // one repetition cannot disagree
	} {
		s := summarize(tc.xs)
		if math.Abs(s.spread()-tc.spread) > 1e-9 || s.noisy() != tc.noisy {
			t.Errorf("%v: spread %v noisy %v, want %v %v", tc.xs, s.spread(), s.noisy(), tc.spread, tc.noisy)
		}
	}
}

func TestRatio(t *testing.T) {
	a, b := summarize([]float64{3}), summarize([]float64{1.5})
	if x, ok := ratio(a, b); !ok || x != 2 {
		t.Errorf("ratio = %v, %v; want 2, true", x, ok)
	}
	if _, ok := ratio(a, summary{}); ok {
		t.Error("ratio against nothing measured is valid")
	}
	if _, ok := ratio(a, summarize([]float64{0})); ok {
		t.Error("ratio against zero is valid")
	}
	if got := times(a, b); got != "2.00×" {
		t.Errorf("times = %q", got)
	}
	if got := times(summarize([]float64{1}), summarize([]float64{8000})); got != "0.000125×" {
		t.Errorf("times of a small ratio = %q", got)
	}
	if got := times(a, summary{}); got != "–" {
		t.Errorf("times against nothing = %q", got)
	}
}

func TestSizes(t *testing.T) {
	if got, want := sizes(0, 8), []int{0, 1, 2, 4, 8}; !slices.Equal(got, want) {
		t.Errorf("sizes(0, 8) = %v, want %v", got, want)
	}
	if got, want := sizes(3, 20), []int{3, 6, 12}; !slices.Equal(got, want) {
		t.Errorf("sizes(3, 20) = %v, want %v", got, want)
	}
	if got := sizes(1, 64<<20); len(got) != 27 || got[26] != 64<<20 {
		t.Errorf("sizes(1, 64 MiB): %d sizes, last %d", len(got), got[len(got)-1])
	}
}

// TestPlans pins the originals' iteration counts.
func TestPlans(t *testing.T) {
	for _, tc := range []struct {
		p     policy
		size  int
		iters int
		skip  int
	}{
		{latencyLoops, 0, 10000, 100},
		{latencyLoops, 8192, 10000, 100},
		{latencyLoops, 16384, 1000, 10},
		{bandwidthLoops, 8192, 100, 10},
		{bandwidthLoops, 16384, 20, 2},
		{collectiveLoops, 1, 1000, 100},
		{collectiveLoops, 1 << 20, 100, 10},
		{imbLoops, 0, 1000, 2},
		{imbLoops, 40 << 10, 1000, 2},
		{imbLoops, 64 << 10, 640, 2},
		{imbLoops, 64 << 20, 1, 2},
	} {
		if got := tc.p.plan(tc.size); got != (iterPlan{tc.size, tc.iters, tc.skip}) {
			t.Errorf("policy %d, %d bytes: %+v, want %d after %d", tc.p, tc.size, got, tc.iters, tc.skip)
		}
	}
}

func TestBenchmarkPlans(t *testing.T) {
	o := &options{max: 64, skip: -1}
	if ps := find("latency").plans(o); len(ps) != 8 || ps[0].Size != 0 {
		t.Errorf("latency plans: %+v", ps)
	}
	if ps := find("bw").plans(o); len(ps) != 7 || ps[0].Size != 1 {
		t.Errorf("bw plans: %+v", ps)
	}
	if ps := find("allreduce").plans(o); len(ps) != 5 || ps[0].Size != 4 {
		t.Errorf("allreduce plans: %+v", ps)
	}
	if ps := find("barrier").plans(o); len(ps) != 1 || ps[0].Size != 0 {
		t.Errorf("barrier plans: %+v", ps)
	}
	o = &options{max: 64, min: 0, minSet: true, iters: 7, skip: 0}
	for _, p := range find("allreduce").plans(o) {
		if p.Size%4 != 0 || p.Size == 0 || p.Iters != 7 || p.Skip != 0 {
			t.Errorf("allreduce with -min 0 -iters 7 -skip 0: %+v", p)
		}
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int{"0": 0, "4096": 4096, "4K": 4096, "4kib": 4096, "64MiB": 64 << 20,
		"64 MB": 64 << 20, "1G": 1 << 30, "8b": 8} {
		if got, err := parseSize(in); err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "-1", "K", "1.5M", "12X", "99999999999G"} {
		if _, err := parseSize(in); err == nil {
			t.Errorf("parseSize(%q) succeeded", in)
		}
	}
}

func TestCopyCount(t *testing.T) {
	for _, tc := range []struct {
		p       iterPlan
		per     int
		atLeast int
		atMost  int
	}{
		{iterPlan{0, 100, 10}, 1, 0, 0},
		{iterPlan{1, 100, 10}, 64, 1000, 6400},
		{iterPlan{64 << 20, 20, 2}, 64, 16, 20},
		{iterPlan{64 << 20, 1, 2}, 1, 1, 1},
	} {
		n := copyCount(tc.p, tc.per)
		if n < tc.atLeast || n > tc.atMost {
			t.Errorf("copyCount(%+v, %d) = %d, want in [%d, %d]", tc.p, tc.per, n, tc.atLeast, tc.atMost)
		}
	}
}
