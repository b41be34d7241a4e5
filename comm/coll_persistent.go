package comm

import (
	"fmt"
	"sync/atomic"

	"github.com/mpgo/mpgo/comm/internal/engine"
)

// Persistent collectives (MPI 4.0 §6.13: MPI_Bcast_init and kin): a
// collective planned once — its arguments checked, its private
// communicator made — and started any number of times with
// [Request.Start] or [StartAll], each start completed by Wait, Test or
// their families. Every member must plan the same collectives in the same
// order, and start them in the same order, as for any collective.
//
// A plan runs the blocking collective on a private communicator (a
// context of its own, derived as Dup's, so that it never meets the
// parent's other collectives), with point-to-point algorithms; where
// every member runs in this process, an Allreduce, Bcast, Allgather or
// Alltoall of 64 KiB or more reads the members' buffers in place
// instead, exchanged at the first start (coll_nonblocking_shm.go). Its first
// start agrees with the other members on the arguments, as a non-blocking
// collective does (coll_agree.go), and so does every start until one
// agreement succeeds: a root, an element type or a length that differs
// between members fails every start, on every member where the blocking
// collective would fail. Each plan
// has a worker goroutine that runs a started operation once the rank
// blocks on something else in mpgo, so that it progresses then; the
// rank's own goroutine runs it instead when it comes to Wait first (no
// hand-over between goroutines then). A rank that computes, or blocks
// outside mpgo, between a start and its Wait leaves the operation where
// it is meanwhile (MPI's weak progress). A start allocates nothing. The
// worker lives until [Request.Free] or the end of the run.

// colorPersistent derives the private context of a persistent collective
// from its parent's (see childContext).
const colorPersistent = -21

// States of a persistent collective between and during its starts.
const (
	planIdle    int32 = iota // not started, or completed
	planPending              // started, not yet taken up
	planRunning              // run by the worker or by the rank's Wait
	planFreed
)

// plan is a persistent collective: the blocking collective run on its
// private communicator p (nil for GoInit's func), and who runs it.
type plan struct {
	p     *Comm
	run   func(p *Comm) error
	r     *engine.Request
	ep    *engine.Endpoint
	state atomic.Int32
	kick  chan struct{} // a start for the worker (buffered: Start never blocks)
	stop  chan struct{} // closed by Free

	kickFn func()      // kickWorker, made once (a method value allocates)
	queued atomic.Bool // kickFn waits in the rank's deferred list
}

// BarrierInit plans a Barrier.
func (c *Comm) BarrierInit() (*Request, error) {
	return c.collInit("barrier_init", func(p *Comm) error { return p.Barrier() })
}

// BcastInit plans a Bcast of buf (see [Comm.Bcast]).
func (c *Comm) BcastInit(buf []byte, t Type, root int) (*Request, error) {
	if err := c.checkRooted("bcast_init", t, root); err != nil {
		return nil, err
	}
	return c.collInit("bcast_init", func(p *Comm) error { return p.Bcast(buf, t, root) })
}

// ReduceInit plans a Reduce (see [Comm.Reduce]).
func (c *Comm) ReduceInit(send, recv []byte, t Type, op Op, root int) (*Request, error) {
	if err := c.checkRooted("reduce_init", t, root); err != nil {
		return nil, err
	}
	if op == nil {
		return nil, fmt.Errorf("comm: reduce_init with a nil op: %w", ErrArg)
	}
	return c.collInit("reduce_init", func(p *Comm) error { return p.Reduce(send, recv, t, op, root) })
}

// AllreduceInit plans an Allreduce (see [Comm.Allreduce]).
func (c *Comm) AllreduceInit(send, recv []byte, t Type, op Op) (*Request, error) {
	if err := c.checkReduce("allreduce_init", t, op); err != nil {
		return nil, err
	}
	return c.collInit("allreduce_init", func(p *Comm) error { return p.Allreduce(send, recv, t, op) })
}

// AllgatherInit plans an Allgather (see [Comm.Allgather]).
func (c *Comm) AllgatherInit(send, recv []byte, t Type) (*Request, error) {
	if err := checkType("allgather_init", t); err != nil {
		return nil, err
	}
	return c.collInit("allgather_init", func(p *Comm) error { return p.Allgather(send, recv, t) })
}

// AlltoallInit plans an Alltoall (see [Comm.Alltoall]).
func (c *Comm) AlltoallInit(send, recv []byte, t Type) (*Request, error) {
	if err := checkType("alltoall_init", t); err != nil {
		return nil, err
	}
	return c.collInit("alltoall_init", func(p *Comm) error { return p.Alltoall(send, recv, t) })
}

// collInit makes the plan of a persistent collective that runs run on its
// private communicator, and its request (inactive until started).
func (c *Comm) collInit(what string, run func(p *Comm) error) (*Request, error) {
	if err := c.begin(what); err != nil {
		return nil, err
	}
	defer c.leave()
	c.kids++
	p := newComm(c.ep, childContext(c.ctx, c.kids, colorPersistent), c.rank, c.size, c.ranks,
		fmt.Sprintf("%s.%s%d", c, what, c.kids))
	p.shareLife(c)
	p.cst = &collState{local: -1, hierSeen: true, private: true, shared: c.sharedMemory(), keep: true}
	return c.planInit(p, run), nil
}

// GoInit is Go made persistent (see [Comm.Go] and the persistent
// collectives): a request, inactive until started, each start of which
// runs f once — on the rank's goroutine when it comes to Wait first,
// else on a worker of the request's own — and completes with f's error.
// It is how persistent forms of composite operations are made (typed's
// persistent neighbourhood collectives). Calls need not match across
// ranks. [Request.Free] ends the worker.
func (c *Comm) GoInit(f func() error) (*Request, error) {
	if f == nil {
		return nil, fmt.Errorf("comm: go init of a nil func: %w", ErrArg)
	}
	if err := c.usable(); err != nil {
		return nil, fmt.Errorf("comm: go init: %w", err)
	}
	return c.planInit(nil, func(*Comm) error { return f() }), nil
}

// planInit makes the plan that runs run (on p, nil for GoInit's) and its
// request.
func (c *Comm) planInit(p *Comm, run func(p *Comm) error) *Request {
	r := c.newReq(engine.KindRecv, false) // never queued: the plan completes it
	pl := &plan{p: p, run: run, r: r, ep: c.ep, kick: make(chan struct{}, 1), stop: make(chan struct{})}
	pl.kickFn = pl.kickWorker
	r.SetCollective()
	r.SetPersistent(pl.start)
	r.SetInline(pl.inline)
	r.SetFree(pl.free)
	c.ep.Go(pl.work)
	return user(r)
}

// start marks the plan started (Request.Start has rearmed r). The rank
// runs it itself if it comes to Wait for it first; the worker is kicked
// only once a goroutine of the rank is about to park on anything (the
// engine's Defer), so that a start and its Wait cost no hand-over between
// goroutines, and the operation still progresses while the rank blocks
// elsewhere.
func (pl *plan) start(*engine.Request) error {
	if !pl.state.CompareAndSwap(planIdle, planPending) {
		return fmt.Errorf("comm: start of a persistent collective that was freed: %w", ErrArg)
	}
	if pl.queued.CompareAndSwap(false, true) { // once in the list, whatever the starts
		pl.ep.Defer(pl.kickFn)
	}
	return nil
}

// kickWorker hands a pending start to the worker.
func (pl *plan) kickWorker() {
	pl.queued.Store(false)
	if pl.state.Load() != planPending {
		return // run or being run already
	}
	select {
	case pl.kick <- struct{}{}:
	default: // a start is waiting for the worker already
	}
}

// inline runs a started operation on the rank's own goroutine, in Wait,
// unless the worker took it up first.
func (pl *plan) inline() {
	if pl.state.CompareAndSwap(planPending, planRunning) {
		if pl.p != nil {
			pl.p.cst.quiet = false // the rank's goroutine waits as itself
		}
		pl.complete(pl.run(pl.p))
	}
}

// work is the worker: it runs each start that the rank's Wait has not
// taken up, until Free or the end of the run.
func (pl *plan) work() {
	for {
		select {
		case <-pl.kick:
		case <-pl.stop:
			return
		case <-pl.ep.Closed():
			return
		}
		if pl.state.CompareAndSwap(planPending, planRunning) {
			pl.ep.AddHelper(1) // running: see engine.Request.WaitQuiet
			if pl.p != nil {
				pl.p.cst.quiet = true
			}
			pl.complete(pl.run(pl.p))
			pl.ep.AddHelper(-1)
		}
	}
}

// complete ends a start with its outcome.
func (pl *plan) complete(err error) {
	pl.state.Store(planIdle)
	pl.r.Complete(engine.Status{}, err)
}

// free ends the plan: its worker stops, and later starts fail.
func (pl *plan) free() {
	if pl.state.CompareAndSwap(planIdle, planFreed) {
		close(pl.stop)
	}
}
