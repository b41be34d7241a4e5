// MG is the MG kernel of the NAS Parallel Benchmarks 3.4 (NPB3.4-MPI
// mg.f90) on mpgo: a V-cycle multigrid solver of the 3-D Poisson equation
// ∇²u = v on a periodic n×n×n grid, v holding +1 at ten points and -1 at
// ten others chosen with NPB's random number generator.
//
// The grid of every level is split into blocks over a power-of-two number
// of ranks (first along z, then y, then x, as NPB's setup does); after
// each stencil operator a rank swaps one-cell ghost faces with its six
// neighbours (comm3: Irecv, Send, Wait per axis and direction, NPB's tags).
// On the coarsest levels, where a rank would hold no interior point, NPB's
// "dead" levels and its take/give expansion (comm3_ex) carry over too.
//
// Run it with
//
//	go run ./examples/npb/mg -class S -np 4
//
// or, as processes over TCP under MPICH's launcher,
//
//	go build -o mg ./examples/npb/mg && mpiexec -n 4 ./mg -class S
//
// It prints NPB's report: the time of the benchmarked iterations (the
// slowest rank's), Mop/s as NPB counts them (58 flops per grid point per
// iteration) and the verdict, the final residual's L2 norm against NPB's
// reference value for the class to a relative 1e-8.
package main

import (
	"io"

	"github.com/mpgo/mpgo/comm"
	"github.com/mpgo/mpgo/examples/npb/internal/npb"
)

func main() { npb.Main("mg", 'S', kernel) }

// kernel is mg as an [npb.Kernel].
func kernel(world *comm.Comm, class npb.Class, out io.Writer) (npb.Result, error) {
	return npb.Result{}, mg(world, class, out)
}

// run runs class on np goroutine ranks.
func run(np int, class npb.Class, out io.Writer) error {
	_, err := npb.Run(np, class, out, kernel)
	return err
}
