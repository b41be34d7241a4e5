package main

import (
	"math"
	"slices"
)

// metric is one figure a benchmark reports.
type metric int

const (
	mLat  metric = iota // µs: latency, a collective's average over ranks, IMB's t (t_avg on more than 2 ranks)
	mMin                // µs: the smallest of the ranks' times
	mMax                // µs: the largest of the ranks' times
	mBW                 // MB/s (10^6 bytes per second, as OSU and IMB)
	mRate               // messages per second
	nMetrics
)

// sample is one repetition's figures for one size, indexed by metric. The
// C program prints the same five numbers in the same order.
type sample [nMetrics]float64

func (m metric) String() string {
	return [...]string{"lat", "min", "max", "bw", "rate"}[m]
}

// unit is the metric's unit as the tables and CSV print it.
func (m metric) unit() string {
	switch m {
	case mBW:
		return "MB/s"
	case mRate:
		return "msgs/s"
	}
	return "µs"
}

// noiseThreshold is the relative spread, (max-min)/median over the
// repetitions, above which a figure is flagged as noisy.
const noiseThreshold = 0.20

// summary describes one figure over the repetitions.
type summary struct {
	Median, Min, Max float64
	N                int // repetitions
}

// summarize returns the median, minimum and maximum of xs; the zero
// summary when xs is empty. xs is not modified.
func summarize(xs []float64) summary {
	if len(xs) == 0 {
		return summary{}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return summary{Median: median(s), Min: s[0], Max: s[len(s)-1], N: len(s)}
}

// median returns the median of sorted s: the middle element, or the mean
// of the two middle ones. NaN for an empty s.
func median(s []float64) float64 {
	n := len(s)
	if n == 0 {
		return math.NaN()
	}
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// spread is (max-min)/median: the repetitions' relative range. 0 when the
// median is not positive (nothing measured, or a zero-byte bandwidth).
func (s summary) spread() float64 {
	if !(s.Median > 0) {
		return 0
	}
	return (s.Max - s.Min) / s.Median
}

// noisy reports whether the repetitions disagree by more than
// noiseThreshold of the median.
func (s summary) noisy() bool { return s.spread() > noiseThreshold }

// valid reports whether the summary holds a positive figure, one that a
// ratio or a log axis can use.
func (s summary) valid() bool { return s.N > 0 && s.Median > 0 && !math.IsInf(s.Median, 0) }

// ratio returns a's median over b's, and false when either is not valid.
func ratio(a, b summary) (float64, bool) {
	if !a.valid() || !b.valid() {
		return 0, false
	}
	return a.Median / b.Median, true
}
