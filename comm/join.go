package comm

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"strconv"

	"github.com/mpgo/mpgo/comm/internal/pmi"
	"github.com/mpgo/mpgo/comm/internal/wire"
)

// ErrBootstrap reports that this process could not join the job its
// launcher started: the launcher's environment or protocol, or the
// exchange of addresses, failed.
var ErrBootstrap = errors.New("comm: cannot join the job")

// JobConfig configures [JoinJob].
type JobConfig struct {
	// EagerLimit is the protocol switch (see [Config]) for messages
	// between ranks of this process and, over TCP, to the other
	// processes. Zero means DefaultEagerLimit in the process and
	// DefaultTCPEagerLimit over TCP.
	EagerLimit int
	// RanksPerProcess is the number of ranks each process runs as
	// goroutines (the same in every process): the job's world has
	// processes × RanksPerProcess ranks, process p running ranks
	// p·k … p·k+k-1. Zero means MPGO_RANKS_PER_PROC, or 1.
	RanksPerProcess int
	// Getenv reads the environment (nil: os.Getenv).
	Getenv func(string) string
}

// Job is this process's part of a job of processes that a launcher
// started (MPICH's mpiexec, Slurm's srun --mpi=pmi2, Open MPI's mpirun
// with MPGO_ROOT): a [World] whose ranks are spread over the processes,
// joined over TCP. Ranks in this process reach each other through shared
// memory, as in a plain world; messages to the others travel over one
// connection per pair of processes, authenticated with a secret the job
// creates at start-up.
//
// Safe for concurrent use.
type Job struct {
	world *World
	dev   Device // *tcpDevice, or *rdmaDevice (rdma_join.go)
	kv    pmi.Job
	ranks []int
	procs int
	self  int
}

// Launched reports whether a launcher started this process (see
// [JoinJob]). A Slurm batch script's single task counts as started
// plainly.
func Launched() bool { return pmi.Detect(os.Getenv) != pmi.None }

// JoinJob joins the job the launcher that started this process runs: it
// learns this process's rank and the job's size from the launcher,
// listens on the interface the launcher names (loopback when every
// process is on this node), publishes its address through the launcher's
// key-value store, and waits until every process did. Connections to the
// other processes open on first use.
//
// The launcher is found from the environment: PMI_FD or PMI_PORT (MPICH's
// Hydra, Slurm with --mpi=pmi2), OMPI_COMM_WORLD_RANK with MPGO_ROOT
// (Open MPI). MPGO_HOST overrides the address to listen on. Unless the
// environment sets GOMAXPROCS, JoinJob lowers it to this process's share
// of the node's cores (see shareCores). Errors wrap ErrBootstrap.
func JoinJob(cfg JobConfig) (*Job, error) {
	return bootstrap(cfg, joinKV)
}

// bootstrap finds the launcher, resolves the ranks per process, shares the
// node's cores, and joins the job through join with the launcher's
// key-value space; when that fails it asks the launcher to end the job.
func bootstrap(cfg JobConfig, join func(kv pmi.Job, cfg JobConfig, getenv func(string) string) (*Job, error)) (*Job, error) {
	getenv := cfg.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	kv, err := pmi.FromEnv(getenv)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBootstrap, err)
	}
	k, err := ranksPerProcess(cfg, getenv)
	if err == nil {
		shareCores(kv.LocalSize(), k, getenv) // before the world sizes its waiting to the Ps
		cfg.RanksPerProcess = k
		var j *Job
		if j, err = join(kv, cfg, getenv); err == nil {
			return j, nil
		}
	}
	kv.Abort(1, err.Error())
	kv.Finalize()
	return nil, err
}

// ranksPerProcess resolves JobConfig.RanksPerProcess.
func ranksPerProcess(cfg JobConfig, getenv func(string) string) (int, error) {
	k := cfg.RanksPerProcess
	if k == 0 {
		k = 1
		if s := getenv("MPGO_RANKS_PER_PROC"); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil || n < 1 {
				return 0, fmt.Errorf("%w: MPGO_RANKS_PER_PROC=%q: want a positive number", ErrBootstrap, s)
			}
			k = n
		}
	}
	if k < 1 {
		return 0, fmt.Errorf("%w: %d ranks per process: %w", ErrBootstrap, k, ErrArg)
	}
	return k, nil
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

// DefaultTCPEagerLimit is the protocol switch between processes unless
// one is configured: messages shorter than it travel with their payload.
// It is larger than the in-process one because a rendezvous over TCP
// costs a network round trip (tens of microseconds, the time to send a
// few hundred kilobytes), while an eager message that waits for its
// receive costs one copy; credits bound what the receiver buffers either
// way.
const DefaultTCPEagerLimit = 512 << 10

// Key names in the launcher's key-value store.
const (
	keySecret = "mpgo-secret" // process 0: the job secret, hex
	keyLayout = "mpgo-layout" // process 0: ranks per process
	keyAddr   = "mpgo-addr-"  // + process: its listening address, hex
)

// joinKV joins the job whose key-value space kv is.
func joinKV(kv pmi.Job, cfg JobConfig, getenv func(string) string) (*Job, error) {
	procs, self := kv.Size(), kv.Rank()
	k, err := ranksPerProcess(cfg, getenv)
	if err != nil {
		return nil, err
	}
	if procs*k > 1<<24 {
		return nil, fmt.Errorf("%w: %d ranks per process: %w", ErrBootstrap, k, ErrArg)
	}
	host, err := listenHost(kv, getenv)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return nil, fmt.Errorf("%w: listening on %s: %w", ErrBootstrap, host, err)
	}
	ok := false
	defer func() {
		if !ok {
			ln.Close()
		}
	}()
	put := func(key, value string) error {
		if err := kv.Put(key, value); err != nil {
			return fmt.Errorf("%w: %w", ErrBootstrap, err)
		}
		return nil
	}
	if err := put(keyAddr+strconv.Itoa(self), hex.EncodeToString([]byte(ln.Addr().String()))); err != nil {
		return nil, err
	}
	if self == 0 {
		secret := make([]byte, 32)
		rand.Read(secret)
		if err := put(keySecret, hex.EncodeToString(secret)); err != nil {
			return nil, err
		}
		if err := put(keyLayout, strconv.Itoa(k)); err != nil {
			return nil, err
		}
	}
	if err := kv.Fence(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBootstrap, err)
	}
	s, err := kv.Get(keySecret)
	if err != nil {
		return nil, fmt.Errorf("%w: the job secret: %w", ErrBootstrap, err)
	}
	secret, err := hex.DecodeString(s)
	if err != nil || len(secret) < 16 {
		return nil, fmt.Errorf("%w: a malformed job secret", ErrBootstrap)
	}
	if s, err := kv.Get(keyLayout); err != nil || s != strconv.Itoa(k) {
		return nil, fmt.Errorf("%w: process 0 runs %s ranks per process, this one %d (%v)", ErrBootstrap, s, k, err)
	}
	tcpEager := DefaultTCPEagerLimit
	if cfg.EagerLimit > 0 {
		tcpEager = min(cfg.EagerLimit, wire.MaxEagerLimit)
	}
	dev := &tcpDevice{owner: func(rank int) int { return rank / k }}
	t, err := wire.New(wire.Config{
		Self: self, Procs: procs, Ranks: procs * k, Owner: dev.owner,
		Secret: secret, Listener: ln, Handler: dev, EagerLimit: tcpEager, WrapError: dev.wrapError,
		Addr: func(p int) (string, error) {
			v, err := kv.Get(keyAddr + strconv.Itoa(p))
			if err != nil {
				return "", err
			}
			a, err := hex.DecodeString(v)
			if err != nil {
				return "", fmt.Errorf("comm: address of process %d: %q", p, v)
			}
			return string(a), nil
		},
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBootstrap, err)
	}
	dev.t = t
	ranks := make([]int, k)
	for i := range ranks {
		ranks[i] = self*k + i
	}
	w, err := NewWorld(procs*k, Config{EagerLimit: cfg.EagerLimit, Local: ranks, Device: dev, Process: dev.owner})
	if err != nil {
		return nil, err
	}
	dev.w = w
	t.Start()
	ok = true
	return &Job{world: w, dev: dev, kv: kv, ranks: ranks, procs: procs, self: self}, nil
}

// listenHost picks the address to listen on: MPGO_HOST if set; loopback
// when every process runs on this node; otherwise the host the launcher
// names (Hydra's MPIR_CVAR_CH3_INTERFACE_HOSTNAME) or this host's name,
// resolved to an address other processes can reach.
func listenHost(kv pmi.Job, getenv func(string) string) (string, error) {
	if h := getenv("MPGO_HOST"); h != "" {
		return h, nil
	}
	if kv.LocalSize() == kv.Size() {
		return "127.0.0.1", nil
	}
	name := getenv("MPIR_CVAR_CH3_INTERFACE_HOSTNAME")
	if name == "" {
		var err error
		if name, err = os.Hostname(); err != nil {
			return "", fmt.Errorf("%w: this host's name: %w", ErrBootstrap, err)
		}
	}
	addrs, err := net.LookupHost(name)
	if err != nil || len(addrs) == 0 {
		return "", fmt.Errorf("%w: resolving %q (set MPGO_HOST to the address to listen on): %w", ErrBootstrap, name, err)
	}
	for _, a := range addrs {
		if ip := net.ParseIP(a); ip != nil && !ip.IsLoopback() {
			return a, nil
		}
	}
	return addrs[0], nil
}

// World returns the job's world: ranks [Job.Ranks] run here.
func (j *Job) World() *World { return j.world }

// Ranks returns the world ranks this process runs.
func (j *Job) Ranks() []int { return append([]int(nil), j.ranks...) }

// Process returns this process's index in the job.
func (j *Job) Process() int { return j.self }

// Processes returns the number of processes in the job.
func (j *Job) Processes() int { return j.procs }

// Close ends this process's part of the job, once its ranks returned:
// when the world is running, the connections close gracefully (messages
// already delivered stay receivable at their destinations); when it was
// aborted, abruptly, so that the other processes learn this one failed.
// The launcher is then told this process finished.
func (j *Job) Close() error {
	j.dev.Close()
	j.world.Close()
	if err := j.kv.Finalize(); err != nil && !errors.Is(err, pmi.ErrClosed) {
		return fmt.Errorf("comm: leaving the job: %w", err)
	}
	return nil
}

// Abort ends the whole job: this world aborts, the connections close
// abruptly, and the launcher is asked to end every process with exit
// status code (it may end this one before Abort returns).
func (j *Job) Abort(code int, msg string) {
	j.world.Abort()
	j.dev.Close()
	j.kv.Abort(code, msg)
}
