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
// runs [WithRanks] or MPGO_NP ranks (default runtime.NumCPU()) as
// goroutines, as [Run] does. Under a launcher (MPICH's mpiexec, Slurm's
// srun --mpi=pmi2, Open MPI's mpirun with MPGO_ROOT) it joins the job
// through the TCP backend, as [Join] does, and on failure asks the
// launcher to end the whole job.
func Main(fn func(world *comm.Comm) error, opts ...Option) {
	if launched() {
		os.Exit(joinMain(fn, opts...))
	}
	if err := mainErr(fn, opts...); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func mainErr(fn func(world *comm.Comm) error, opts ...Option) error {
	cfg, err := newConfig(opts)
	if err != nil {
		return err
	}
	n, err := np(cfg)
	if err != nil {
		return err
	}
	return Run(n, fn, opts...)
}

// np is the number of goroutine ranks for Main.
func np(cfg *config) (int, error) {
	if cfg.ranks > 0 {
		return cfg.ranks, nil
	}
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

// joinJob joins the launcher's job over the backend the options or
// MPGO_BACKEND ("tcp", the default, or "rdma": see [WithFabric]) name.
func joinJob(cfg *config) (*comm.Job, error) {
	backend := cfg.backend
	if backend == "" {
		backend = os.Getenv("MPGO_BACKEND")
	}
	job := comm.JobConfig{EagerLimit: cfg.eagerLimit}
	switch backend {
	case "", "tcp":
		return comm.JoinJob(job)
	case "rdma":
		return comm.JoinFabricJob(comm.FabricConfig{JobConfig: job, Provider: cfg.provider})
	}
	return nil, fmt.Errorf("mpgo: MPGO_BACKEND=%q: want tcp or rdma: %w", backend, comm.ErrArg)
}

// launched reports whether a known launcher started this process.
func launched() bool { return comm.Launched() }
