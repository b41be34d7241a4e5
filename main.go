package mpgo

import (
	"fmt"
	"os"
	"runtime"
	"strconv"

	"github.com/mpgo/mpgo/backend/rdma"
	"github.com/mpgo/mpgo/backend/shm"
	"github.com/mpgo/mpgo/backend/tcp"
	"github.com/mpgo/mpgo/comm"
	"github.com/mpgo/mpgo/comm/device"
	"github.com/mpgo/mpgo/internal/job"
	"github.com/mpgo/mpgo/internal/pmi"
)

// ErrBootstrap reports that this process could not join the job its
// launcher started: the launcher's environment or protocol, or the
// backend's exchange of addresses, failed. (It is device.ErrBootstrap.)
var ErrBootstrap = device.ErrBootstrap

// Main runs fn SPMD and exits the process: with status 0 when every rank
// succeeded, 1 (after printing the error) otherwise. Started plainly, it
// runs ranks as goroutines, as [Run] does: MPGO_NP of them when the
// environment sets it, else [WithRanks]'s number, else runtime.NumCPU()
// (see WithRanks for why the environment comes first). Under a launcher (MPICH's mpiexec, Slurm's
// srun --mpi=pmi2, Open MPI's mpirun with MPGO_ROOT and MPGO_SECRET: see
// Launchers in the package documentation) it joins the job as [Join]
// does (shared memory between the processes of a host, TCP between hosts), and on failure asks the launcher to end the
// whole job.
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
	n, err := np(cfg, os.Getenv)
	if err != nil {
		return err
	}
	return Run(n, fn, append(opts, withSignalReport())...)
}

// withSignalReport makes Run report its ranks' pending operations on
// SIGINT or SIGQUIT (Main's goroutine ranks: Main owns the process).
func withSignalReport() Option {
	return func(c *config) error {
		c.signals = true
		return nil
	}
}

// np is the number of goroutine ranks for Main without a launcher:
// MPGO_NP, else WithRanks, else one per CPU.
func np(cfg *config, getenv func(string) string) (int, error) {
	s := getenv("MPGO_NP")
	if s == "" {
		if cfg.ranks > 0 {
			return cfg.ranks, nil
		}
		return runtime.NumCPU(), nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("mpgo: MPGO_NP=%q: want a positive number: %w", s, comm.ErrArg)
	}
	return n, nil
}

// joinJob joins the job the launcher that started this process runs, over
// the backend cfg or MPGO_BACKEND names (TCP by default).
func joinJob(cfg *config) (*job.Job, error) {
	backend := cfg.backend
	if backend == "" {
		backend = os.Getenv("MPGO_BACKEND")
	}
	open, err := opener(backend, cfg, os.Getenv)
	if err != nil {
		return nil, err
	}
	j, err := bootstrap(os.Getenv, job.Config{EagerLimit: cfg.eagerLimit, EagerBuffer: cfg.eagerBuffer, DetectDeadlock: !cfg.noDeadlock, Observe: cfg.obs.world()}, open)
	if err == nil && j.Process() == 0 {
		if w := ranksIgnored(cfg.ranks, j.World().Size()); w != "" {
			fmt.Fprintln(os.Stderr, w)
		}
	}
	return j, err
}

// ranksIgnored is the warning process 0 prints when a launcher started a
// world of size ranks and the program asked WithRanks(ranks) (0: did not
// ask) for another number: "" when they agree.
func ranksIgnored(ranks, size int) string {
	if ranks == 0 || ranks == size {
		return ""
	}
	return fmt.Sprintf("mpgo: warning: WithRanks(%d) ignored: the launcher started %d ranks (its -n, times MPGO_RANKS_PER_PROC)", ranks, size)
}

// opener returns how to open the named backend's device, routing the
// messages between processes of one host through the shared-memory
// backend unless that is off ([sharedMemory]).
func opener(backend string, cfg *config, getenv func(string) string) (job.Opener, error) {
	far, err := farOpener(backend, cfg, getenv)
	if err != nil || !sharedMemory(cfg, getenv) {
		return far, err
	}
	return job.WithNear(func(kv device.KV, l device.Layout) (job.Near, error) {
		return shm.Open(kv, shm.Config{Layout: l, EagerLimit: cfg.eagerLimit, Getenv: getenv})
	}, far), nil
}

// sharedMemory reports whether processes of one host talk through
// shared memory: unless [WithoutSharedMemory] or MPGO_SHM=0 says not,
// or MPGO_HEARTBEAT asks for a heartbeat, which only the TCP backend
// keeps (a stopped process keeps its shared-memory peers waiting).
func sharedMemory(cfg *config, getenv func(string) string) bool {
	if cfg.noSHM || getenv("MPGO_SHM") == "0" {
		return false
	}
	hb := getenv("MPGO_HEARTBEAT")
	return hb == "" || hb == "0"
}

// farOpener returns how to open the named backend's device.
func farOpener(backend string, cfg *config, getenv func(string) string) (job.Opener, error) {
	switch backend {
	case "", "tcp":
		return func(kv device.KV, l device.Layout) (device.Device, error) {
			return tcp.Open(kv, tcp.Config{Layout: l, EagerLimit: cfg.eagerLimit, Getenv: getenv})
		}, nil
	case "rdma":
		if !FabricSupported {
			return nil, fmt.Errorf("mpgo: MPGO_BACKEND=rdma: the RDMA backend: %w (build with -tags rdma)", comm.ErrNotSupported)
		}
		return func(kv device.KV, l device.Layout) (device.Device, error) {
			return rdma.Open(kv, rdma.Config{Layout: l, EagerLimit: cfg.eagerLimit, Provider: cfg.provider})
		}, nil
	}
	return nil, fmt.Errorf("mpgo: MPGO_BACKEND=%q: want tcp or rdma: %w", backend, comm.ErrArg)
}

// bootstrap finds the launcher, resolves the ranks per process, shares the
// node's cores, and joins the job through open with the launcher's
// key-value store; when that fails it asks the launcher to end the job.
// Errors wrap ErrBootstrap.
func bootstrap(getenv func(string) string, cfg job.Config, open job.Opener) (*job.Job, error) {
	kv, err := pmi.FromEnv(getenv)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBootstrap, err)
	}
	k, err := ranksPerProcess(getenv)
	if err == nil {
		shareCores(kv.LocalSize(), k, getenv) // before the world sizes its waiting to the Ps
		cfg.RanksPerProcess = k
		var j *job.Job
		if j, err = job.Join(kv, cfg, open); err == nil {
			return j, nil
		}
	}
	kv.Abort(1, err.Error())
	kv.Finalize()
	return nil, err
}

// ranksPerProcess reads MPGO_RANKS_PER_PROC (default 1).
func ranksPerProcess(getenv func(string) string) (int, error) {
	s := getenv("MPGO_RANKS_PER_PROC")
	if s == "" {
		return 1, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("%w: MPGO_RANKS_PER_PROC=%q: want a positive number: %w", ErrBootstrap, s, comm.ErrArg)
	}
	return n, nil
}

// shareCores lowers GOMAXPROCS to this process's share of the node's
// cores, as MPI launchers do when they bind each process to its cores:
// processes × Ps beyond the cores make the Go scheduler's idle Ps spin and
// steal each other's cores, which costs a point-to-point handoff several
// microseconds. The share is the node's CPUs over the processes on the
// node, and at least the ranks of this process. An explicit GOMAXPROCS in
// the environment is left alone.
func shareCores(onNode, ranks int, getenv func(string) string) {
	if getenv("GOMAXPROCS") != "" || onNode < 1 {
		return
	}
	if share := max(ranks, runtime.NumCPU()/onNode); share < runtime.GOMAXPROCS(0) {
		runtime.GOMAXPROCS(share)
	}
}

// launched reports whether a launcher started this process. A Slurm batch
// script's single task counts as started plainly.
func launched() bool { return pmi.Detect(os.Getenv) != pmi.None }
