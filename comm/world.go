package comm

import (
	"fmt"
	"time"

	"github.com/mpgo/mpgo/comm/device"
	"github.com/mpgo/mpgo/comm/internal/engine"
)

// World is one run's set of ranks that share this process's memory: their
// inboxes, the abort state and the deadlock detector. The root package's
// Run creates one per call, and a launcher's job one per process (with a
// [device.Device] to the others); nothing is shared between worlds.
// Programs meet worlds only through their communicators: World is for
// launchers and backends.
//
// Safe for concurrent use.
type World engine.World

// DefaultEagerLimit is the message size (bytes) from which sends use the
// rendezvous protocol instead of an eager copy.
const DefaultEagerLimit = engine.DefaultEagerLimit

// DefaultEagerBuffer is how many bytes of eager messages one rank may
// have sent to another and not had received yet before its further
// messages to that rank wait for their receives (see Config.EagerBuffer).
const DefaultEagerBuffer = engine.DefaultEagerBuffer

// Config configures a [World].
type Config struct {
	// EagerLimit is the protocol switch size in bytes: messages shorter than
	// it are copied eagerly, longer ones wait for their receive
	// (rendezvous). Zero means DefaultEagerLimit.
	EagerLimit int
	// EagerBuffer bounds, per pair of ranks of this process (sender,
	// receiver), the memory of eager copies queued at the receiver and
	// not received yet, each counted as its payload and 256 bytes: a
	// message for which the bound leaves no room goes by rendezvous
	// instead (see the package documentation, Protocols). Zero means
	// DefaultEagerBuffer; negative is an error.
	EagerBuffer int
	// DetectDeadlock enables the deadlock detector. With a Device, it is
	// the detector across the job's processes (every process must enable
	// it; see World.JobDeadlock), which looks every 250ms.
	DetectDeadlock bool
	// DetectInterval is how often the in-process detector looks (default
	// 5ms).
	DetectInterval time.Duration
	// Local lists the world ranks that run in this process (nil: all of
	// them); the others are reached through Device.
	Local []int
	// Device carries messages to the ranks that are not local. Required
	// when Local leaves ranks out. NewWorld starts it (Device.Start) with
	// the world's engine; the caller closes it, before the world. With a
	// device, DetectDeadlock runs the detector across processes.
	Device device.Device
	// Process tells which process runs each world rank, numbered as the
	// device numbers them (required with a Device). Collectives on
	// communicators that span processes with several members in some then
	// work in two levels (shared memory inside each process, the device
	// between one leader per process). Nil: one process.
	Process func(rank int) int
	// Node tells which node (host) runs each world rank: ranks of the
	// same number share memory, which [Comm.SplitType] with [SplitShared]
	// groups by. Nil: each process (Process) is a node of its own, and
	// without a Process map the whole world is one node.
	Node func(rank int) int
	// Observe says what the world records of its run: a timeline,
	// counters, the outcomes of wildcard matching. Zero: nothing.
	Observe Observe
}

// NewWorld creates a world of n ranks. With a Device, it starts the device
// (Device.Start) with the world's engine.
func NewWorld(n int, cfg Config) (*World, error) {
	obs, err := newObserver(n, &cfg)
	if err != nil {
		return nil, err
	}
	w, err := engine.NewWorld(n, engine.Config{EagerLimit: cfg.EagerLimit, EagerBuffer: cfg.EagerBuffer, DetectDeadlock: cfg.DetectDeadlock,
		DetectInterval: cfg.DetectInterval, Local: cfg.Local, Device: cfg.Device, Process: cfg.Process, Node: cfg.Node, Observe: obs})
	if err == nil && cfg.Device != nil && cfg.DetectDeadlock {
		w.DetectAcross(0, func(r engine.PendingRank) string { return pendingOp(r).Op })
	}
	return (*World)(w), err
}

func (w *World) e() *engine.World { return (*engine.World)(w) }

// Size returns the number of ranks.
func (w *World) Size() int { return w.e().Size() }

// Comm returns the world communicator of rank r (a new *Comm each call).
func (w *World) Comm(rank int) *Comm {
	return newComm(w.e().Endpoint(rank), worldContext, rank, w.Size(), nil, "world")
}

// Abort fails every pending and later operation of every rank with
// ErrAborted. Safe to call more than once.
func (w *World) Abort() { w.e().Abort() }

// Abort ends the whole run, as MPI_Abort does in practice: every pending
// and later operation of every rank — not only of c's members — fails with
// an error wrapping both [ErrAborted] and cause (when not nil), naming c
// and the caller's rank. Under a launcher the other processes learn it as
// this process lost, and abort too. The first abort wins; Abort on a nil
// or freed communicator does nothing.
func (c *Comm) Abort(cause error) {
	if c == nil || c.ep == nil {
		return
	}
	if cause != nil {
		cause = fmt.Errorf("rank %d of %s called Abort: %w", c.rank, c, cause)
	} else {
		cause = fmt.Errorf("rank %d of %s called Abort", c.rank, c)
	}
	c.ep.World().AbortWith(cause)
}

// Close ends the world: later operations fail with ErrClosed, anything
// still pending with ErrAborted, and the detector stops. Call it once every
// rank has returned, and after closing the world's device (a rendezvous
// still being pulled from it fails then, and Close waits for it).
func (w *World) Close() { w.e().Close() }

// RankDone records that rank's function returned: it will not send again.
func (w *World) RankDone(rank int) { w.e().RankDone(rank) }
