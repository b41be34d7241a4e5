package comm

import (
	"fmt"
	"sync/atomic"

	"github.com/mpgo/mpgo/comm/internal/coll"
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
// instead, exchanged at the first start (coll_nonblocking_shm.go); between
// processes, an Allreduce run by recursive doubling, a Barrier, a short
// Bcast and Reduce, an Allgather and an Alltoall replay their
// algorithm's exchanges with point-to-point requests made once
// (coll_persistent_replay.go). Its
// first start agrees with the other members on the arguments, as a
// non-blocking collective does (coll_agree.go), and so does every start
// until one agreement succeeds: a root, an element type or a length that
// differs between members fails every start, on every member where the
// blocking collective would fail. Each plan has a worker goroutine that
// runs a started operation once the rank blocks on something else in
// mpgo, so that it progresses then; the rank's own goroutine runs it
// instead when it comes to Wait first (no hand-over between goroutines
// then). A rank that computes, or blocks outside mpgo, between a start
// and its Wait leaves the operation where it is meanwhile (MPI's weak
// progress). A start allocates nothing. The worker lives until
// [Request.Free] or the end of the run.
//
// Where the parent communicator has a table of non-blocking collectives
// (coll_nonblocking_meet.go), starts meet there as non-blocking calls do,
// in the same order: a short one waits there on a pooled request of its
// own, which the last member to arrive completes after doing the
// operation for all, and the rank's Wait (or the worker) completes the
// start with its outcome; a long one arrives, then runs as above. Once a
// short start completed there with every member a plan's start, the
// plans are linked, and their later starts meet in their group instead
// (coll_persistent_linked.go): the last member to start does the
// operation and completes every member's request, with no table and no
// request of their own. An 8-byte Allreduce started and waited for
// (typed's BenchmarkPersistentAllreduce, 2 cores) went from 550–590 to
// 230–270 ns on 2 ranks (the blocking call: 450–580), from 3.5 to 1.3–1.4
// µs on 8 (blocking 2.2), and from 28 to 13 µs on 64 (blocking 57–63).

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

	// A persistent collective's starts meet in its parent's table where
	// the parent has one, as non-blocking collectives do
	// (coll_nonblocking_meet.go): c is the parent, what the collective,
	// call what its starts bring to their meetings (nil for GoInit's
	// plans, whose starts need not match across ranks), slow the
	// operation run on p, made once. q is the current start's request in
	// its meeting, when the start waits there: the rank's Wait or the
	// worker waits on it, then completes r with its outcome.
	c    *Comm
	what string
	call *nbCall
	slow func(p *Comm, quiet bool) error
	q    *engine.Request

	// Once a start completed in the table with every member a plan's,
	// the plans are linked and start in their group instead
	// (coll_persistent_linked.go): own is this member's part in the
	// current start, sleeper the receive its waiter sleeps on, waiting
	// whether the rank's Wait or the worker waits; held is the sleeper's
	// receive while a last member holds it (taken off its queue).
	group   atomic.Pointer[planGroup]
	own     atomic.Uint32
	sleeper atomic.Pointer[engine.Request]
	held    *engine.Request
	waiting atomic.Bool
}

// BarrierInit plans a Barrier.
func (c *Comm) BarrierInit() (*Request, error) {
	return c.collInit("barrier_init", &nbCall{sig: collSig{kind: kBarrier, t: Byte}, fast: nbFast{ok: true}},
		replayed(coll.Barrier, 0, coll.Dissemination, (*Comm).Barrier, (*Comm).barrierReplay))
}

// BcastInit plans a Bcast of buf (see [Comm.Bcast]).
func (c *Comm) BcastInit(buf []byte, t Type, root int) (*Request, error) {
	if err := c.checkRooted("bcast_init", t, root); err != nil {
		return nil, err
	}
	call := c.bcastCall("bcast_init", buf, t, root)
	return c.collInit("bcast_init", &call, replayed(coll.Bcast, len(buf), coll.Binomial,
		func(p *Comm) error { return p.Bcast(buf, t, root) },
		func(p *Comm) *replay { return p.bcastReplay(buf, t, root) }))
}

// ReduceInit plans a Reduce (see [Comm.Reduce]).
func (c *Comm) ReduceInit(send, recv []byte, t Type, op Op, root int) (*Request, error) {
	if err := c.checkRooted("reduce_init", t, root); err != nil {
		return nil, err
	}
	if op == nil {
		return nil, fmt.Errorf("comm: reduce_init with a nil op: %w", ErrArg)
	}
	call := c.reduceCall("reduce_init", send, recv, t, op, root)
	return c.collInit("reduce_init", &call, replayed(coll.Reduce, len(send), coll.Binomial,
		func(p *Comm) error { return p.Reduce(send, recv, t, op, root) },
		func(p *Comm) *replay { return p.reduceReplay(send, recv, t, op, root) }))
}

// AllreduceInit plans an Allreduce (see [Comm.Allreduce]).
func (c *Comm) AllreduceInit(send, recv []byte, t Type, op Op) (*Request, error) {
	if err := c.checkReduce("allreduce_init", t, op); err != nil {
		return nil, err
	}
	call := c.allreduceCall("allreduce_init", send, recv, t, op)
	run := func(p *Comm) error { return p.Allreduce(send, recv, t, op) }
	if call.local == nil && c.size > 1 {
		alg := coll.Auto
		run = replayed(coll.Allreduce, len(send), coll.RecursiveDoubling,
			func(p *Comm) error { return p.allreduceStart(&alg, send, recv, t, op) },
			func(p *Comm) *replay { return p.allreduceReplay(send, recv, t, op) })
	}
	return c.collInit("allreduce_init", &call, run)
}

// allreduceStart is a start of a persistent Allreduce on its private
// communicator c, whose arguments its plan checked once (and found
// good), where it does not replay its algorithm: it skips Allreduce's
// checks, and the algorithm, chosen at the first start into *alg, is the
// same at every start (a plan's communicator has no shared-memory or
// node-aware form, and nothing pins its algorithms). A start needs no
// busy mark either: the plan's state runs one start at a time. The first
// start, and every start of a run that records (which logs the call and
// its algorithm), is the blocking call's.
func (c *Comm) allreduceStart(alg *coll.Algorithm, send, recv []byte, t Type, op Op) error {
	if *alg == coll.Auto || c.ct != nil {
		if c.ct == nil { // a recorded pick is Allreduce's
			if a := c.pick(coll.Allreduce, coll.Plain, len(send)); a != coll.SharedMemory {
				*alg = a
			}
		}
		return c.Allreduce(send, recv, t, op)
	}
	if err := c.usable(); err != nil {
		return collErr("allreduce", err)
	}
	return c.allreduceBy(*alg, send, recv, t, op, nil)
}

// AllgatherInit plans an Allgather (see [Comm.Allgather]).
func (c *Comm) AllgatherInit(send, recv []byte, t Type) (*Request, error) {
	if err := checkType("allgather_init", t); err != nil {
		return nil, err
	}
	call := c.allgatherCall("allgather_init", send, recv, t)
	return c.collInit("allgather_init", &call, replayed(coll.Allgather, 0, coll.Auto,
		func(p *Comm) error { return p.Allgather(send, recv, t) },
		func(p *Comm) *replay { return p.allgatherReplay(send, recv, t) }))
}

// AlltoallInit plans an Alltoall (see [Comm.Alltoall]).
func (c *Comm) AlltoallInit(send, recv []byte, t Type) (*Request, error) {
	if err := checkType("alltoall_init", t); err != nil {
		return nil, err
	}
	call := c.alltoallCall("alltoall_init", send, recv, t)
	return c.collInit("alltoall_init", &call, replayed(coll.Alltoall, 0, coll.Auto,
		func(p *Comm) error { return p.Alltoall(send, recv, t) },
		func(p *Comm) *replay { return p.alltoallReplay(send, recv, t) }))
}

// collInit makes the plan of a persistent collective that runs run on its
// private communicator, and its request (inactive until started).
func (c *Comm) collInit(what string, call *nbCall, run func(p *Comm) error) (*Request, error) {
	if err := c.begin(what); err != nil {
		return nil, err
	}
	defer c.leave()
	c.kids++
	p := newComm(c.ep, childContext(c.ctx, c.kids, colorPersistent), c.rank, c.size, c.ranks,
		fmt.Sprintf("%s.%s%d", c, what, c.kids))
	p.shareLife(c)
	p.cst = &collState{local: -1, hierSeen: true, private: true, shared: c.sharedMemory(), keep: true}
	r, pl := c.planInit(p, run)
	pl.c, pl.what, pl.call = c, what, call
	pl.slow = func(_ *Comm, quiet bool) error {
		p.cst.quiet = quiet
		return run(p)
	}
	return r, nil
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
	r, _ := c.planInit(nil, func(*Comm) error { return f() })
	return r, nil
}

// planInit makes the plan that runs run (on p, nil for GoInit's) and its
// request.
func (c *Comm) planInit(p *Comm, run func(p *Comm) error) (*Request, *plan) {
	r := c.newReq(engine.KindRecv, false) // never queued: the plan completes it
	pl := &plan{p: p, run: run, r: r, ep: c.ep, kick: make(chan struct{}, 1), stop: make(chan struct{})}
	pl.kickFn = pl.kickWorker
	r.SetCollective()
	r.SetPersistent(pl.start)
	r.SetInline(pl.inline)
	r.SetFree(pl.free)
	c.ep.Go(pl.work)
	return user(r), pl
}

// start marks the plan started (Request.Start has rearmed r). The rank
// runs it itself if it comes to Wait for it first; the worker is kicked
// only once a goroutine of the rank is about to park on anything (the
// engine's Defer), so that a start and its Wait cost no hand-over between
// goroutines, and the operation still progresses while the rank blocks
// elsewhere.
func (pl *plan) start(*engine.Request) error {
	if g := pl.group.Load(); g != nil {
		if pl.state.Load() == planFreed {
			return fmt.Errorf("comm: start of a persistent collective that was freed: %w", ErrArg)
		}
		return pl.startLinked(g)
	}
	var t *nbTable
	if pl.call != nil {
		t = pl.c.nbTable()
	}
	var m nbMember
	if t != nil {
		x := pl.call
		m = nbMember{c: pl.c, what: pl.what, sig: x.sig, op: x.op, local: x.local, fast: x.fast, slow: pl.slow, started: !x.fast.ok}
		if x.fast.ok {
			m.pl = pl // its meeting may link the plans (coll_persistent_linked.go)
			// The start waits in its meeting on a request of its own
			// (pooled: a start allocates nothing), which the last
			// arriver completes, or an abort or the deadlock detector
			// fails; set before the start is visible to the worker.
			q, err := pl.c.selfWait(true)
			if err != nil {
				return fmt.Errorf("comm: start of %s: %w", pl.what, err)
			}
			pl.q, m.r = q, q
		}
	}
	if !pl.state.CompareAndSwap(planIdle, planPending) {
		if q := pl.q; q != nil {
			pl.q = nil
			q.Retract(nil)
			q.Finish()
		}
		return fmt.Errorf("comm: start of a persistent collective that was freed: %w", ErrArg)
	}
	if t != nil {
		pl.c.meet(t, &m)
	}
	if pl.queued.CompareAndSwap(false, true) { // once in the list, whatever the starts
		pl.ep.Defer(pl.kickFn)
	}
	return nil
}

// awaitMeeting ends a start that waited in its meeting (pl.q, taken by
// the caller, which moved the plan to planRunning): once the meeting
// completed q, or an abort or the deadlock detector failed it, r
// completes with that outcome. quiet: the worker waits, not the rank.
//
// A q that failed is not recycled: its meeting's last arriver, if one
// ever comes, still tries to take it off its queue (Take reads it), and
// a recycled q could by then be another operation's. The collector takes
// it instead; only aborts and deadlocks pay that allocation.
func (pl *plan) awaitMeeting(q *engine.Request, quiet bool) {
	pl.q = nil
	if quiet {
		q.WaitQuiet()
	} else {
		q.WaitPooled()
	}
	err := q.Cause()
	if err == nil {
		q.Finish() // done with: the meeting completed it
	}
	pl.complete(err)
}

// kickWorker hands a pending start to the worker.
func (pl *plan) kickWorker() {
	pl.queued.Store(false)
	if pl.linked() != nil {
		if pl.own.Load() != memberArrived || pl.waiting.Load() || pl.r.Completed() {
			return // done, or being waited for
		}
	} else if pl.state.Load() != planPending {
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
	if g := pl.linked(); g != nil {
		pl.awaitLinked(g, false)
		return
	}
	if pl.state.CompareAndSwap(planPending, planRunning) {
		if q := pl.q; q != nil {
			pl.awaitMeeting(q, false)
			return
		}
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
		g := pl.linked()
		if g == nil && !pl.state.CompareAndSwap(planPending, planRunning) {
			continue // the rank's Wait runs it, or ran it
		}
		pl.ep.AddHelper(1) // running: see engine.Request.WaitQuiet
		switch {
		case g != nil:
			pl.awaitLinked(g, true)
		case pl.q != nil:
			pl.awaitMeeting(pl.q, true)
		default:
			if pl.p != nil {
				pl.p.cst.quiet = true
			}
			pl.complete(pl.run(pl.p))
		}
		pl.ep.AddHelper(-1)
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
