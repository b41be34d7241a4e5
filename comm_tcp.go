package mpgo

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/mpgo/mpgo/comm"
	"github.com/mpgo/mpgo/internal/job"
)

// Join runs fn SPMD on this process's ranks of a job that a launcher
// started, and returns when they have returned. The processes of one
// host talk through shared memory (package backend/shm; MPGO_SHM=0 or
// [WithoutSharedMemory] turns that off, and MPGO_HEARTBEAT, which only
// TCP keeps, does too), the others over TCP (or RDMA: MPGO_BACKEND): MPICH's mpiexec and Slurm's srun --mpi=pmi2 are found through
// their PMI socket (PMI_FD or PMI_PORT), Open MPI's mpirun through
// OMPI_COMM_WORLD_RANK with a rendezvous address in MPGO_ROOT=host:port
// and a job secret in MPGO_SECRET, without which it refuses to start
// (see Launchers in the package documentation).
// Each process runs MPGO_RANKS_PER_PROC ranks (default 1) as goroutines;
// the world has processes × that many ranks.
//
// Semantics are those of [Run], across processes: a rank that fails or
// panics aborts this process's ranks, and the other processes, once they
// notice this one broke off, fail with errors wrapping [comm.ErrPeerLost]
// (and [comm.ErrAborted]); this process tells them the failed rank's
// original error first, which their errors wrap as a [comm.PeerFailure]
// (and Main prints once, as "rank R failed: …"). Join returns the first failure as a
// [RankError]; errors joining the job wrap [ErrBootstrap]. Join does
// not end the other processes itself; [Main] does, through the launcher.
func Join(fn func(world *comm.Comm) error, opts ...Option) error {
	cfg, err := newConfig(opts)
	if err != nil {
		return err
	}
	if fn == nil {
		return fmt.Errorf("mpgo: Join with a nil function: %w", comm.ErrArg)
	}
	job, err := joinJob(cfg)
	if err != nil {
		return err
	}
	err = runJob(job, fn, cfg)
	if cerr := job.Close(); err == nil {
		err = cerr
	}
	if rerr := cfg.obs.report(job.World(), job.Process(), job.Device()); err == nil {
		err = rerr
	}
	return err
}

// joinMain is Main under a launcher: it joins the job, runs fn, and
// returns the exit status. On failure it prints the error and asks the
// launcher to end the whole job.
func joinMain(fn func(world *comm.Comm) error, opts ...Option) int {
	cfg, err := newConfig(opts)
	if err == nil && fn == nil {
		err = fmt.Errorf("mpgo: Main with a nil function: %w", comm.ErrArg)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	job, err := joinJob(cfg)
	if err != nil { // JoinJob asked the launcher to end the job
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := runJob(job, fn, cfg); err != nil {
		var shown any = err
		if pf := peerFailure(err); pf != nil {
			shown = pf // the cause, once, not the chain of its consequences
		}
		if errors.Is(err, errSignal) {
			return 1 // the report is printed, and the signal ends the process
		}
		fmt.Fprintf(os.Stderr, "mpgo: process %d of %d: %v\n", job.Process(), job.Processes(), shown)
		// What was recorded helps most when a run fails: report it even
		// so (a send the device completes meanwhile may be missing).
		if rerr := cfg.obs.report(job.World(), job.Process(), job.Device()); rerr != nil {
			fmt.Fprintln(os.Stderr, rerr)
		}
		// Launchers forward output asynchronously and drop what is in flight
		// when they end the job: let the report reach them first (and the
		// coordinator's report of a deadlock across processes).
		time.Sleep(abortGrace)
		var jd *jobDeadlock
		if errors.As(err, &jd) {
			time.Sleep(deadlockGrace)
		}
		job.Abort(1, err.Error())
		return 1
	}
	if err := job.Close(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := cfg.obs.report(job.World(), job.Process(), job.Device()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// abortGrace is how long Main waits between printing a failure and
// asking the launcher to end the job.
const abortGrace = 100 * time.Millisecond

// deadlockGrace is how much longer a process whose ranks deadlocked with
// the others' waits before it ends the job: the coordinating process
// prints the report once every process's part came.
const deadlockGrace = 500 * time.Millisecond

// runJob runs fn on the job's local ranks as Run does on a whole world.
// A failure aborts the local world; the device then closes abruptly, so
// that the other processes learn of it.
func runJob(job *job.Job, fn func(world *comm.Comm) error, cfg *config) error {
	stop := watchSignals(job.World(), job.Ranks(), fmt.Sprintf("mpgo: process %d of %d: ", job.Process(), job.Processes()))
	defer stop()
	err := runRanks(job.World(), job.Ranks(), fn, cfg)
	if errors.Is(err, comm.ErrDeadlock) || err != nil && job.World().Deadlock() != nil {
		// The detector across processes: this process's part of the
		// report must reach the coordinating process before it leaves,
		// which has the whole job's.
		if d, ok := job.World().JobDeadlock(deadlockWait); ok {
			return d
		}
		return &jobDeadlock{err}
	}
	return err
}

// deadlockWait bounds how long a process waits for the report of a
// deadlock across processes to be gathered.
const deadlockWait = 3 * time.Second

// jobDeadlock is the failure of a process, not the one coordinating the
// detector across processes, whose ranks were deadlocked: the report is
// the coordinator's to print.
type jobDeadlock struct{ err error }

func (e *jobDeadlock) Error() string {
	return "deadlocked with the job's other processes (the lowest process still running prints the report)"
}

func (e *jobDeadlock) Unwrap() error { return e.err }

// WithRanks sets the program's number of goroutine ranks for [Main] when no
// launcher started the process; a program's -np flag becomes
// mpgo.Main(fn, mpgo.WithRanks(*np)).
//
// Precedence, started plainly: MPGO_NP in the environment, when set, beats
// WithRanks, which beats the default of runtime.NumCPU(). WithRanks is the
// program's default (a flag's default value looks the same to Main as one
// the user typed), and the environment is where the person running the
// program overrides defaults without editing it or learning its flags, as
// GOGC and GODEBUG do. A program that wants its flag to win passes it only
// when set (flag.Visit), or unsets MPGO_NP.
//
// Under a launcher the launcher decides the number of processes, and
// MPGO_RANKS_PER_PROC the ranks in each; a WithRanks that disagrees with
// the size of that world is ignored with a one-line warning on standard
// error from process 0 ([Run] takes its n and ignores WithRanks).
func WithRanks(n int) Option {
	return func(c *config) error {
		if n < 1 {
			return fmt.Errorf("mpgo: WithRanks(%d): %w", n, comm.ErrArg)
		}
		c.ranks = n
		return nil
	}
}
