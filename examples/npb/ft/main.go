// FT is the FT kernel of the NAS Parallel Benchmarks 3.4 (NPB3.4-MPI
// ft.f90) on mpgo: it solves the 3-D diffusion equation ∂u/∂t = α∇²u
// spectrally, with a forward 3-D FFT of random initial data, then per
// time step a multiplication by exp(-4απ²|k|²t) and an inverse 3-D FFT,
// and checks a checksum of 1024 points of every step against NPB's.
//
// The grid is distributed as NPB does: on one rank whole (0-D layout); on
// up to nz ranks in slabs of z-planes (1-D), which after the x and y FFTs
// are transposed into slabs of y-planes through one Alltoall so that the
// z FFTs are local; beyond nz ranks in pencils over an np1×np2 grid (2-D),
// with two transposes over Alltoall within rows and columns of the grid
// (sub-communicators from Split). The 1-D FFTs are NPB's Stockham variant
// of Swarztrauber's algorithm, on blocks of 16 lines at a time.
//
// Run it with
//
//	go run ./examples/npb/ft -class S -np 4
//
// or, as processes over TCP under MPICH's launcher,
//
//	go build -o ft ./examples/npb/ft && mpiexec -n 4 ./ft -class S
//
// It prints NPB's report: the checksums, the time (rank 0's, set-up,
// FFTs and checksums included, as NPB times it), Mop/s by NPB's formula
// and the verdict, every checksum against NPB's to a relative 1e-12.
package main

import (
	"io"

	"github.com/mpgo/mpgo/comm"
	"github.com/mpgo/mpgo/examples/npb/internal/npb"
)

func main() { npb.Main("ft", 'S', kernel) }

// kernel is ft as an [npb.Kernel].
func kernel(world *comm.Comm, class npb.Class, out io.Writer) (npb.Result, error) {
	return npb.Result{}, ft(world, class, out)
}

// run runs class on np goroutine ranks.
func run(np int, class npb.Class, out io.Writer) error {
	_, err := npb.Run(np, class, out, kernel)
	return err
}
