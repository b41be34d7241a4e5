package main

import (
	"fmt"
	"time"

	"github.com/mpgo/mpgo/typed"
)

// The one-sided benchmarks of the OSU Micro-Benchmarks 7.x
// (osu_put_latency, osu_get_latency, osu_acc_latency, osu_fop_latency,
// osu_cas_latency, osu_put_bw) with their defaults: the window allocated by
// the library (-w allocate), one per message size, created and freed
// outside the timed region, and passive-target synchronisation with flush
// (-s flush): rank 0 locks rank 1's part (shared), and every operation is
// followed by a Flush (osu_put_bw: every window of operations); rank 1
// makes no call meanwhile. Latency is the timed region over the
// iterations; osu_put_bw's bandwidth is size × window × iterations over
// it, in MB/s.

func init() {
	benchmarks = append(benchmarks, rmaBenchmarks...)
}

// rmaBenchmarks are the one-sided benchmarks, run after the others by all.
var rmaBenchmarks = []*benchmark{
	{name: "put_latency", origin: "osu_put_latency", class: pointToPoint, policy: latencyLoops, minSize: 1, sized: true,
		def:     "Lock(1, shared); Put + Flush per iteration; Unlock; latency = time / iterations",
		figures: []metric{mLat}, copyBase: true, ranks: two, buffers: oneEach, kernel: osuPutLatency},
	{name: "get_latency", origin: "osu_get_latency", class: pointToPoint, policy: latencyLoops, minSize: 1, sized: true,
		def:     "Lock(1, shared); Get + Flush per iteration; Unlock; latency = time / iterations",
		figures: []metric{mLat}, copyBase: true, ranks: two, buffers: oneEach, kernel: osuGetLatency},
	{name: "acc_latency", origin: "osu_acc_latency", class: pointToPoint, policy: latencyLoops, minSize: 1, sized: true,
		def:     "Lock(1, shared); Accumulate (uint8 sum) + Flush per iteration; Unlock; latency = time / iterations",
		figures: []metric{mLat}, copyBase: true, ranks: two, buffers: oneEach, kernel: osuAccLatency},
	{name: "fop_latency", origin: "osu_fop_latency", class: pointToPoint, policy: latencyLoops, sized: false,
		def:     "Lock(1, shared); FetchAndOp (int64 sum) + Flush per iteration; Unlock; latency = time / iterations",
		figures: []metric{mLat}, ranks: two, buffers: ackOnly, kernel: osuFopLatency},
	{name: "cas_latency", origin: "osu_cas_latency", class: pointToPoint, policy: latencyLoops, sized: false,
		def:     "Lock(1, shared); CompareAndSwap (int64) + Flush per iteration; Unlock; latency = time / iterations",
		figures: []metric{mLat}, ranks: two, buffers: ackOnly, kernel: osuCasLatency},
	{name: "put_bw", origin: "osu_put_bw", class: pointToPoint, policy: bandwidthLoops, minSize: 1, sized: true,
		def:     "Lock(1, shared); per iteration a window of Puts to consecutive places, then Flush; MB/s = size*window*iters/time",
		figures: []metric{mBW}, copyBase: true, ranks: two, buffers: oneEach, kernel: osuPutBW},
}

func osuPutLatency(e *env, p iterPlan) (sample, error) {
	src := e.sbuf[:p.Size]
	return rmaLatency(e, p, p.Size, func(w *typed.Window[byte]) error { return w.Put(src, 1, 0) })
}

func osuGetLatency(e *env, p iterPlan) (sample, error) {
	dst := e.rbuf[:p.Size]
	return rmaLatency(e, p, p.Size, func(w *typed.Window[byte]) error { return w.Get(dst, 1, 0) })
}

func osuAccLatency(e *env, p iterPlan) (sample, error) {
	src := e.sbuf[:p.Size]
	return rmaLatency(e, p, p.Size, func(w *typed.Window[byte]) error { return w.Accumulate(src, 1, 0, typed.Sum[byte]) })
}

func osuFopLatency(e *env, p iterPlan) (sample, error) {
	return rmaLatency(e, p, 1, func(w *typed.Window[int64]) error {
		_, err := w.FetchAndOp(1, 1, 0, typed.Sum[int64])
		return err
	})
}

func osuCasLatency(e *env, p iterPlan) (sample, error) {
	var cmp int64
	return rmaLatency(e, p, 1, func(w *typed.Window[int64]) error {
		old, err := w.CompareAndSwap(cmp, cmp+1, 1, 0)
		cmp = old + 1 // the value now there: every swap succeeds, as OSU's compare of the old value does not
		return err
	})
}

// rmaLatency times op + Flush as the OSU one-sided latency loop does, on
// a window of n elements of T per rank, and returns rank 0's figure.
func rmaLatency[T any](e *env, p iterPlan, n int, op func(w *typed.Window[T]) error) (sample, error) {
	var lat float64
	err := onWindow(e, n, func(w *typed.Window[T]) error {
		var t0 time.Time
		for i := 0; i < p.Iters+p.Skip; i++ {
			if i == p.Skip {
				t0 = time.Now()
			}
			if err := op(w); err != nil {
				return err
			}
			if err := w.Flush(1); err != nil {
				return err
			}
		}
		lat = us(time.Since(t0)) / float64(p.Iters)
		return nil
	})
	return sample{mLat: lat}, err
}

// osuPutBW is osu_put_bw: per iteration, e.window Puts of size bytes to
// consecutive places of rank 1's part, from consecutive places of the
// source, then one Flush.
func osuPutBW(e *env, p iterPlan) (sample, error) {
	src := touched(p.Size * e.window)
	var bw float64
	err := onWindow(e, p.Size*e.window, func(w *typed.Window[byte]) error {
		var t0 time.Time
		for i := 0; i < p.Iters+p.Skip; i++ {
			if i == p.Skip {
				t0 = time.Now()
			}
			for j := range e.window {
				if err := w.Put(src[j*p.Size:(j+1)*p.Size], 1, j*p.Size); err != nil {
					return err
				}
			}
			if err := w.Flush(1); err != nil {
				return err
			}
		}
		bw = float64(p.Size) / 1e6 * float64(p.Iters) * float64(e.window) / time.Since(t0).Seconds()
		return nil
	})
	return sample{mBW: bw}, err
}

// onWindow allocates a window of n elements per rank (shared, with
// e.shared), runs timed on rank 0 inside a shared lock of rank 1's part
// while rank 1 waits in a barrier (making no call that could progress
// anything), and frees the window.
func onWindow[T any](e *env, n int, timed func(w *typed.Window[T]) error) error {
	alloc := typed.AllocWindow[T]
	if e.shared {
		alloc = typed.AllocSharedWindow[T]
	}
	w, _, err := alloc(e.w, n)
	if err != nil {
		return fmt.Errorf("mpbench: window of %d elements: %w", n, err)
	}
	if e.w.Rank() == 0 {
		if err := w.Lock(1, false); err != nil {
			return err
		}
		if err := timed(w); err != nil {
			return err
		}
		if err := w.Unlock(1); err != nil {
			return err
		}
	}
	if err := e.w.Barrier(); err != nil {
		return err
	}
	return w.Free()
}
