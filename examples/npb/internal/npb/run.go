package npb

import (
	"fmt"
	"io"
	"os"

	"github.com/mpgo/mpgo"
	"github.com/mpgo/mpgo/comm"
)

// Kernel runs a benchmark of class on the ranks of world: rank 0 writes
// NPB's report to out and returns the result (the other ranks a zero
// Result); a failed verification is an error on rank 0, after the report.
type Kernel func(world *comm.Comm, class Class, out io.Writer) (Result, error)

// Main is a kernel's main function: it parses -class (default def) and
// -np, and runs k through [mpgo.Main]: -np goroutine ranks when started
// plainly, one rank per process (over TCP) under mpiexec.
func Main(name string, def Class, k Kernel) {
	flags, err := ParseFlags(def)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		os.Exit(2)
	}
	mpgo.Main(func(world *comm.Comm) error {
		_, err := k(world, flags.Class, os.Stdout)
		return err
	}, mpgo.WithRanks(flags.NP))
}

// Run runs k for class on np goroutine ranks and returns rank 0's result.
func Run(np int, class Class, out io.Writer, k Kernel) (Result, error) {
	var res Result
	err := mpgo.Run(np, func(world *comm.Comm) error {
		r, err := k(world, class, out)
		if world.Rank() == 0 {
			res = r
		}
		return err
	})
	return res, err
}
