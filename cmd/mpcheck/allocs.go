package main

import (
	"fmt"
	"runtime"
	"slices"

	"github.com/mpgo/mpgo/comm"
	"github.com/mpgo/mpgo/typed"
)

// allocs starts every persistent collective (with small buffers, so that
// the ones that replay their algorithm between processes do) 1,000 times
// after a warm-up, a Barrier after each, and fails when its starts (and
// the Barriers) allocated, in this whole process, more than a quarter of
// an object each: one allocation a start would be 1,000; what the rest
// of the process allocates meanwhile (the device's goroutines, the
// runtime parking ranks) stays far below.
func allocs(w *comm.Comm) error {
	const warm, iters = 100, 1000
	n := w.Size()
	c := typed.Of[float64](w)
	cart, err := w.CartCreate([]int{n}, []bool{true}, false)
	if err != nil {
		return err
	}
	in, out, all := []float64{1, 2}, make([]float64, 2), make([]float64, 2*n)
	plans := []struct {
		name string
		mk   func() (*comm.Request, error)
	}{
		{"barrier", c.BarrierInit},
		{"bcast", func() (*comm.Request, error) { return c.BcastInit(in, n-1) }},
		{"reduce", func() (*comm.Request, error) { return c.ReduceInit(in, out, typed.Sum[float64], 0) }},
		{"allreduce", func() (*comm.Request, error) { return c.AllreduceInit(in, out, typed.Sum[float64]) }},
		{"allgather", func() (*comm.Request, error) { return c.AllgatherInit(in, all) }},
		{"alltoall", func() (*comm.Request, error) { return c.AlltoallInit(slices.Clone(all), all) }},
		{"neighbor allgather", func() (*comm.Request, error) { return typed.NeighborAllgatherInit(cart, in[:1], out) }},
		{"neighbor alltoall", func() (*comm.Request, error) { return typed.NeighborAlltoallInit(cart, slices.Clone(out), out) }},
	}
	for _, p := range plans {
		r, err := p.mk()
		if err != nil {
			return fmt.Errorf("%s: %w", p.name, err)
		}
		var before, after runtime.MemStats
		for i := range warm + iters {
			if i == warm {
				runtime.ReadMemStats(&before)
			}
			if err := r.Start(); err != nil {
				return fmt.Errorf("%s: %w", p.name, err)
			}
			if _, err := r.Wait(); err != nil {
				return fmt.Errorf("%s: %w", p.name, err)
			}
			// As OSU's collective loops: a member that only sends
			// (a Bcast's leaf's parent, a Reduce's leaf) would else run
			// ahead, and its messages wait, each in a shell of its own.
			if err := w.Barrier(); err != nil {
				return err
			}
		}
		runtime.ReadMemStats(&after)
		if err := r.Free(); err != nil {
			return err
		}
		if a := float64(after.Mallocs-before.Mallocs) / iters; a > 0.25 {
			return fmt.Errorf("persistent %s on %d ranks: %.2f allocations a start", p.name, n, a)
		}
		if err := w.Barrier(); err != nil {
			return err
		}
	}
	fmt.Printf("rank %d: allocs: ok\n", w.Rank())
	return nil
}
