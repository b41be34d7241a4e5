// Package pmi joins a process to the job a launcher started it in: it
// learns the process's rank and the job's size, and exchanges small
// key-value pairs with the job's other processes (their listening
// addresses and the job secret) through the launcher.
//
// Three bootstraps are supported, chosen from the environment by
// [FromEnv]:
//
//   - MPICH's Hydra (mpiexec) and anything else that speaks the PMI-1 wire
//     protocol on an inherited socket (PMI_FD) or a port (PMI_PORT with
//     PMI_ID): [Client];
//   - Slurm's srun --mpi=pmi2, whose socket accepts the same PMI-1 text
//     protocol (a missing key answers rc=1 there, rc=-1 with Hydra);
//   - Open MPI's mpirun (OMPI_COMM_WORLD_*), with addresses exchanged
//     through a rendezvous the user names (MPGO_ROOT=host:port) and
//     guards with a secret (MPGO_SECRET): [Root].
//
// Every bootstrap is a [Job]: puts become visible to the other processes
// after a [Job.Fence] that every process calls. Keys and values are
// printable ASCII without spaces or '='; callers hex-encode binary values.
//
// The package knows nothing of mpgo's messages; the root package joins a
// process to its job through it, and the backends open from its store.
package pmi

import (
	"errors"
	"fmt"
	"sync"

	"github.com/mpgo/mpgo/comm/device"
)

// Sentinel errors.
var (
	// ErrNotFound reports a key that no process put before the last fence.
	ErrNotFound = errors.New("pmi: key not found")
	// ErrProtocol reports a reply the launcher should not have sent, or a
	// connection to it that failed.
	ErrProtocol = errors.New("pmi: launcher protocol error")
	// ErrNoLauncher reports an environment that names no usable launcher
	// (or names one incompletely).
	ErrNoLauncher = errors.New("pmi: no launcher")
	// ErrArg reports a key or value the wire protocol cannot carry.
	ErrArg = errors.New("pmi: invalid argument")
	// ErrClosed reports the use of a job after Finalize or Abort.
	ErrClosed = errors.New("pmi: job finalized")
)

// Job is this process's view of the job the launcher started: its rank,
// the job's size, and a key-value space shared by the job's processes. It
// is the boundary's key-value store, device.KV, which backends open from;
// here Get's errors wrap ErrNotFound for a key nobody put.
//
// Implementations are safe for concurrent use; calls are serialized.
type Job = device.KV

// checkWord reports whether s can travel as a key or value: printable
// ASCII, no spaces, no '=' (the protocol's separators), not empty.
func checkWord(what, s string, max int) error {
	if s == "" {
		return fmt.Errorf("pmi: empty %s: %w", what, ErrArg)
	}
	if max > 0 && len(s) > max {
		return fmt.Errorf("pmi: %s of %d bytes, the launcher allows %d: %w", what, len(s), max, ErrArg)
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c >= 0x7f || c == '=' {
			return fmt.Errorf("pmi: %s %q: byte %#x at %d is not allowed: %w", what, s, c, i, ErrArg)
		}
	}
	return nil
}

// memory is the key-value space of [NewMemory]'s jobs.
type memory struct {
	mu      sync.Mutex
	cond    *sync.Cond
	n       int
	pending map[string]string // puts not yet fenced
	visible map[string]string
	arrived int    // processes in the current fence
	epoch   uint64 // completed fences
	aborted *int
}

type memJob struct {
	m    *memory
	rank int
	done bool
}

// NewMemory returns the jobs of n processes sharing one in-memory
// key-value space (for tests: each process is played by a goroutine).
// Aborting one makes every later Fence fail.
func NewMemory(n int) []Job {
	m := &memory{n: n, pending: map[string]string{}, visible: map[string]string{}}
	m.cond = sync.NewCond(&m.mu)
	jobs := make([]Job, n)
	for i := range jobs {
		jobs[i] = &memJob{m: m, rank: i}
	}
	return jobs
}

func (j *memJob) Rank() int      { return j.rank }
func (j *memJob) Size() int      { return j.m.n }
func (j *memJob) LocalRank() int { return j.rank }
func (j *memJob) LocalSize() int { return j.m.n }

func (j *memJob) Put(key, value string) error {
	if err := checkWord("key", key, 0); err != nil {
		return err
	}
	if err := checkWord("value", value, 0); err != nil {
		return err
	}
	j.m.mu.Lock()
	defer j.m.mu.Unlock()
	if j.done {
		return ErrClosed
	}
	j.m.pending[key] = value
	return nil
}

func (j *memJob) Fence() error {
	m := j.m
	m.mu.Lock()
	defer m.mu.Unlock()
	if j.done {
		return ErrClosed
	}
	if m.aborted != nil {
		return fmt.Errorf("pmi: job aborted with status %d: %w", *m.aborted, ErrProtocol)
	}
	epoch := m.epoch
	m.arrived++
	if m.arrived == m.n {
		for k, v := range m.pending {
			m.visible[k] = v
		}
		clear(m.pending)
		m.arrived = 0
		m.epoch++
		m.cond.Broadcast()
		return nil
	}
	for m.epoch == epoch && m.aborted == nil {
		m.cond.Wait()
	}
	if m.epoch == epoch {
		return fmt.Errorf("pmi: job aborted with status %d: %w", *m.aborted, ErrProtocol)
	}
	return nil
}

func (j *memJob) Get(key string) (string, error) {
	j.m.mu.Lock()
	defer j.m.mu.Unlock()
	if j.done {
		return "", ErrClosed
	}
	v, ok := j.m.visible[key]
	if !ok {
		return "", fmt.Errorf("pmi: get %q: %w", key, ErrNotFound)
	}
	return v, nil
}

func (j *memJob) Abort(code int, msg string) error {
	j.m.mu.Lock()
	defer j.m.mu.Unlock()
	if j.m.aborted == nil {
		j.m.aborted = &code
		j.m.cond.Broadcast()
	}
	j.done = true
	return nil
}

func (j *memJob) Finalize() error {
	j.m.mu.Lock()
	defer j.m.mu.Unlock()
	j.done = true
	return nil
}
