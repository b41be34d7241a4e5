package comm

import (
	"fmt"
	"sync/atomic"

	"github.com/mpgo/mpgo/comm/device"
)

// OneSided is direct access to the memory that ranks of a communicator in
// other processes expose, through a device that reads and writes it
// itself ([device.OneSided]: the RDMA backend), without those ranks, or
// handlers of theirs, taking part. Windows of package typed use it; most
// programs never meet it.
//
// Safe for concurrent use.
type OneSided struct {
	c    *Comm
	dev  device.OneSided
	prog device.Progressor
}

// OneSided returns the one-sided access of c's device, or nil when c's
// ranks all run in this process or the device reaching the others offers
// none (TCP, the shared-memory device between processes).
func (c *Comm) OneSided() *OneSided {
	if c == nil || c.ep == nil {
		return nil
	}
	dev, prog := c.ep.World().OneSided()
	if dev == nil {
		return nil
	}
	return &OneSided{c: c, dev: dev, prog: prog}
}

// Expose registers mem, the calling rank's memory, for the other
// processes' access until the exposure is closed; its Remote is what they
// pass to Write, Read and Atomic. mem must stay valid and in place until
// then: memory off the Go heap, or a Go object the caller pinned
// (runtime.Pinner).
func (o *OneSided) Expose(mem []byte) (device.Exposure, error) {
	x, err := o.dev.Expose(mem)
	if err != nil {
		return nil, fmt.Errorf("comm: exposing %d bytes on %s: %w", len(mem), o.c, err)
	}
	return x, nil
}

// Atomics reports whether the device applies op to elements of t as an
// atomic operation of kind.
func (o *OneSided) Atomics(kind device.AtomicKind, t device.AtomicType, op device.AtomicOp) bool {
	return o.dev.Atomics(kind, t, op)
}

// Write copies src into the memory of c's rank at at (exposed by that
// rank); src may be reused as soon as Write returns. The operation is
// complete at the target when the returned RMA is.
func (o *OneSided) Write(rank int, src []byte, at device.Remote) (*RMA, error) {
	return o.start("Write", rank, func(r int, done func(error)) error { return o.dev.Write(r, src, at, done) })
}

// Read copies len(into) bytes of the memory of c's rank at at into
// into, which must stay untouched until the returned RMA completes.
func (o *OneSided) Read(rank int, into []byte, at device.Remote) (*RMA, error) {
	return o.start("Read", rank, func(r int, done func(error)) error { return o.dev.Read(r, into, at, done) })
}

// Atomic applies a to the memory of c's rank at at; a.Result, if any,
// must stay untouched until the returned RMA completes.
func (o *OneSided) Atomic(rank int, a device.Atomic, at device.Remote) (*RMA, error) {
	return o.start("Atomic", rank, func(r int, done func(error)) error { return o.dev.Atomic(r, a, at, done) })
}

// start checks rank and starts an operation on it.
func (o *OneSided) start(op string, rank int, call func(r int, done func(error)) error) (*RMA, error) {
	if rank < 0 || rank >= o.c.size {
		return nil, fmt.Errorf("comm: OneSided.%s on rank %d of %s of %d ranks: %w", op, rank, o.c, o.c.size, ErrRank)
	}
	r := &RMA{prog: o.prog, done: make(chan struct{})}
	if err := call(o.c.worldOf(rank), r.complete); err != nil {
		return nil, fmt.Errorf("comm: OneSided.%s on rank %d of %s: %w", op, rank, o.c, err)
	}
	return r, nil
}

// RMA is a one-sided operation in flight.
type RMA struct {
	prog  device.Progressor
	ready atomic.Bool
	err   error // set before ready
	done  chan struct{}
}

func (r *RMA) complete(err error) {
	r.err = err
	r.ready.Store(true)
	close(r.done)
}

// Ready reports whether the operation is complete ([device.Waiter]).
func (r *RMA) Ready() bool { return r.ready.Load() }

// Wait waits until the operation is complete, at the target as well as
// here, and returns its error: one wrapping [ErrAborted] or [ErrClosed]
// when the world ended first. The waiting rank drives the device's
// progress for a while before it parks, as a receive does.
func (r *RMA) Wait() error {
	if !r.ready.Load() && r.prog != nil {
		r.prog.Drive(r)
	}
	<-r.done
	return r.err
}
