package mpgo

import (
	"fmt"
	"os"
	"runtime"
	"strconv"

	"github.com/mpgo/mpgo/comm"
)

// Main runs fn SPMD and exits the process: with status 0 when every rank
// succeeded, 1 (after printing the error) otherwise. Started plainly, it
// runs MPGO_NP ranks (default runtime.NumCPU()) as goroutines, as [Run]
// does. Under a launcher (MPICH's mpiexec, Slurm's srun, Open MPI's mpirun)
// it will join the job through the TCP backend; until that backend exists
// it reports ErrNotSupported there rather than run a wrong job.
func Main(fn func(world *comm.Comm) error, opts ...Option) {
	if err := mainErr(fn, opts...); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func mainErr(fn func(world *comm.Comm) error, opts ...Option) error {
	if launched() {
		return fmt.Errorf("mpgo: started by a launcher: the TCP backend is not built yet: %w", comm.ErrNotSupported)
	}
	n, err := np()
	if err != nil {
		return err
	}
	return Run(n, fn, opts...)
}

// np is the number of goroutine ranks for Main.
func np() (int, error) {
	s := os.Getenv("MPGO_NP")
	if s == "" {
		return runtime.NumCPU(), nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("mpgo: MPGO_NP=%q: want a positive number: %w", s, comm.ErrArg)
	}
	return n, nil
}

// launched reports whether a known launcher started this process.
func launched() bool {
	for _, k := range []string{"PMI_FD", "PMI_PORT", "PMI_RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK"} {
		if os.Getenv(k) != "" {
			return true
		}
	}
	return false
}
