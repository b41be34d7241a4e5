package main

import (
	"time"
)

// The baselines every point-to-point figure is judged against, measured in
// the same run as the figure: what Go itself does with no library between
// two goroutines.

// chanPingPong is the latency baseline: a []byte of size handed back and
// forth over unbuffered channels between two goroutines (no copy; the
// slice header travels), reported as half the round trip, as osu_latency
// reports its figure. It runs at least 1,000 round trips, so that its
// figure is steady even where the benchmark runs few.
func chanPingPong(p iterPlan) float64 {
	iters, skip := max(p.Iters, 1000), max(p.Skip, 10)
	ping, pong := make(chan []byte), make(chan []byte)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m := range ping {
			pong <- m
		}
	}()
	buf := make([]byte, p.Size)
	for i := 0; i < skip; i++ {
		ping <- buf
		buf = <-pong
	}
	t0 := time.Now()
	for i := 0; i < iters; i++ {
		ping <- buf
		buf = <-pong
	}
	d := time.Since(t0)
	close(ping)
	<-done
	return us(d) / (2 * float64(iters))
}

// Bounds on the copy baseline's work for one size and repetition.
const (
	copyMinBytes = 64 << 20 // enough copies of a small size to time well
	copyMaxBytes = 1 << 30  // few enough copies of a large one to stay short
)

// copyCount is how many copies the baseline makes for plan p of a
// benchmark with messages per iteration: as many as the benchmark sends,
// but at least 1,000 (or 64 MiB) and at most 1 GiB's worth (or the
// benchmark's iteration count).
func copyCount(p iterPlan, perIter int) int {
	n := p.Iters * perIter
	if p.Size == 0 {
		return 0
	}
	n = max(n, min(1000, copyMinBytes/p.Size))
	return max(min(n, copyMaxBytes/p.Size), p.Iters, 1)
}

// copyBaseline is the bandwidth baseline: copy() of size bytes between two
// buffers, n times after one untimed copy (both buffers reused, as the
// benchmarks reuse theirs). It returns the time of one copy in µs and the
// bandwidth in MB/s; zeros for size 0, where there is nothing to copy.
func copyBaseline(size, n int) (lat, bw float64) {
	if size == 0 {
		return 0, 0
	}
	src, dst := touched(size), touched(size)
	copy(dst, src)
	t0 := time.Now()
	for i := 0; i < n; i++ {
		copy(dst, src)
	}
	lat = us(time.Since(t0)) / float64(n)
	return lat, bandwidth(size, lat)
}
