// Package job wires a process into a job that a launcher started:
// key-value store → backend device → world. The root package mpgo joins
// through it under a launcher, and the backends' tests through it with an
// in-memory store (pmi.NewMemory) playing every process in one.
package job

import (
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"

	"github.com/mpgo/mpgo/comm"
	"github.com/mpgo/mpgo/comm/device"
	"github.com/mpgo/mpgo/internal/pmi"
)

// Config configures [Join].
type Config struct {
	// RanksPerProcess is the number of ranks each process runs as
	// goroutines (the same in every process): the job's world has
	// processes × RanksPerProcess ranks, process p running ranks
	// p·k … p·k+k-1. Zero means 1.
	RanksPerProcess int
	// EagerLimit is the protocol switch between ranks of this process
	// (see comm.Config); zero means comm.DefaultEagerLimit. The backend
	// has its own, in its configuration.
	EagerLimit int
	// EagerBuffer bounds the eager messages queued between two ranks of
	// this process (see comm.Config); zero means comm.DefaultEagerBuffer.
	EagerBuffer int
	// Host names this process's host, for the world's node map
	// (comm.Config.Node): processes of the same host are one node.
	// Empty means pmi.HostID. Tests set it to play several hosts.
	Host string
	// Observe says what the world records of its run (see comm.Config).
	Observe comm.Observe
	// DetectDeadlock runs the deadlock detector across the job's
	// processes (comm.Config.DetectDeadlock with a device): every process
	// must set it.
	DetectDeadlock bool
}

// Opener opens a backend's device for this process, from the job's
// key-value store and layout. It must publish what the others need and
// call kv.Fence before it returns: [Join] checks the layout after it.
// Errors should wrap [device.ErrBootstrap].
type Opener func(kv device.KV, layout device.Layout) (device.Device, error)

// Job is this process's part of a job of processes: a [comm.World] whose
// ranks are spread over the processes, ranks of this process reaching
// each other through shared memory and the others through a device.
//
// Safe for concurrent use.
type Job struct {
	world *comm.World
	dev   device.Device
	kv    device.KV
	ranks []int
	procs int
	self  int
}

// Key names in the key-value store.
const (
	keyLayout = "mpgo-layout" // process 0: its ranks per process
	keyHost   = "mpgo-host-"  // + process: its host (pmi.HostID)
)

// maxRanks bounds the job's world.
const maxRanks = 1 << 24

// Join joins the job whose key-value store kv is: it opens the device with
// open, checks that every process runs as many ranks as process 0, and
// makes the world (which starts the device). Errors wrap
// device.ErrBootstrap; the caller ends the job when it fails.
func Join(kv device.KV, cfg Config, open Opener) (*Job, error) {
	procs, self := kv.Size(), kv.Rank()
	k := cfg.RanksPerProcess
	if k == 0 {
		k = 1
	}
	if k < 1 || procs*k > maxRanks {
		return nil, fmt.Errorf("%w: %d ranks per process: %w", device.ErrBootstrap, k, device.ErrArg)
	}
	if self == 0 {
		if err := kv.Put(keyLayout, strconv.Itoa(k)); err != nil {
			return nil, fmt.Errorf("%w: %w", device.ErrBootstrap, err)
		}
	}
	host := cfg.Host
	if host == "" {
		host = pmi.HostID()
	}
	if err := kv.Put(keyHost+strconv.Itoa(self), hex.EncodeToString([]byte(host))); err != nil {
		return nil, fmt.Errorf("%w: %w", device.ErrBootstrap, err)
	}
	owner := func(rank int) int { return rank / k }
	dev, err := open(kv, device.Layout{Ranks: procs * k, Owner: owner})
	if err != nil {
		return nil, err
	}
	if s, err := kv.Get(keyLayout); err != nil || s != strconv.Itoa(k) {
		dev.Close()
		return nil, fmt.Errorf("%w: process 0 runs %s ranks per process, this one %d (%v)", device.ErrBootstrap, s, k, err)
	}
	nodes, err := nodeMap(kv)
	if err != nil {
		dev.Close()
		return nil, err
	}
	ranks := make([]int, k)
	for i := range ranks {
		ranks[i] = self*k + i
	}
	w, err := comm.NewWorld(procs*k, comm.Config{EagerLimit: cfg.EagerLimit, EagerBuffer: cfg.EagerBuffer, DetectDeadlock: cfg.DetectDeadlock, Observe: cfg.Observe, Local: ranks, Device: dev, Process: owner,
		Node: func(rank int) int { return nodes[owner(rank)] }})
	if err != nil {
		dev.Close()
		return nil, fmt.Errorf("%w: %w", device.ErrBootstrap, err)
	}
	return &Job{world: w, dev: dev, kv: kv, ranks: ranks, procs: procs, self: self}, nil
}

// nodeMap reads every process's host from kv (after the opener's fence)
// and numbers each process's node by the first process on its host.
func nodeMap(kv device.KV) ([]int, error) {
	nodes := make([]int, kv.Size())
	first := map[string]int{}
	for p := range nodes {
		h, err := kv.Get(keyHost + strconv.Itoa(p))
		if err != nil {
			return nil, fmt.Errorf("%w: the host of process %d: %w", device.ErrBootstrap, p, err)
		}
		if _, ok := first[h]; !ok {
			first[h] = p
		}
		nodes[p] = first[h]
	}
	return nodes, nil
}

// World returns the job's world: ranks [Job.Ranks] run here.
func (j *Job) World() *comm.World { return j.world }

// Device returns the backend's device.
func (j *Job) Device() device.Device { return j.dev }

// Ranks returns the world ranks this process runs.
func (j *Job) Ranks() []int { return append([]int(nil), j.ranks...) }

// Process returns this process's index in the job.
func (j *Job) Process() int { return j.self }

// Processes returns the number of processes in the job.
func (j *Job) Processes() int { return j.procs }

// Close ends this process's part of the job, once its ranks returned:
// when the world is running, the device closes gracefully (messages
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

// Abort ends the whole job: this world aborts, the device closes
// abruptly, and the launcher is asked to end every process with exit
// status code (it may end this one before Abort returns).
func (j *Job) Abort(code int, msg string) {
	j.world.Abort()
	j.dev.Close()
	j.kv.Abort(code, msg)
}
