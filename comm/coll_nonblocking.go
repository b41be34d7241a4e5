package comm

import (
	"fmt"
	"sync/atomic"

	"github.com/mpgo/mpgo/comm/internal/engine"

	"github.com/mpgo/mpgo/comm/internal/coll"
)

// The non-blocking collectives. Each runs the blocking point-to-point
// algorithm on a goroutine of its own, on a private context derived from
// the communicator's like Dup's (every member derives the same one, as
// they call collectives in the same order), so that its messages never
// meet those of the communicator's other collectives. A rank that comes
// to Wait for the request before that goroutine took the operation up
// runs it itself, in Wait (runNB); where every member runs in this
// process, long vectors are read in place (coll_nonblocking_shm.go), and
// once a blocking collective has set up the communicator's shared table,
// the calls meet there first, where the short ones of every form but the
// v-forms complete without a goroutine (coll_nonblocking_meet.go).
//
// The request the caller gets is a receive posted on that private context,
// from the caller to itself, which no message matches: the goroutine
// completes it when the algorithm ends, by withdrawing it with the
// algorithm's outcome (World.retract). Being an ordinary posted receive,
// an abort fails it like any other, and a rank that waits on it is seen
// by the deadlock detector, which can fail it too; the withdrawal and
// those are settled under the queue's lock, so the request completes once.
//
// The goroutine waits without being recorded as parked (collCall.quiet),
// and counts itself in the rank's helpers while it runs: the deadlock
// detector takes the rank for blocked only when its own goroutine is
// parked and no such goroutine runs, so a collective still computing is
// never taken for a stuck one, and a stuck one is reported through the
// request the rank waits on. The goroutine leaves nothing behind: it ends
// with the algorithm, and when the run ends first, the abort or close
// fails the operations it waits on.
//
// Each form rejects the arguments that are invalid on their own (an
// element type, a root, a nil op) at once, as its blocking form does.
// Then, before its algorithm, it agrees with the other members on what
// the blocking form checks between them — the collective, the root, the
// element type, the length every member passes alike, and each member's
// argument errors — and fails on every member where the blocking form
// (sharing memory) would, with the same sentinel (coll_agree.go). Ibarrier,
// Ibcast and Iallreduce run their algorithm directly; the other forms run
// the blocking collective itself on the private communicator
// (startNBCall). The buffers, and the count and displacement slices,
// belong to the operation until the request completes. Cancel refuses these
// requests (MPI makes it erroneous): completing one would leave the
// operation running.

// Ibarrier starts a barrier and returns at once; the request completes
// once every member has called Ibarrier (dissemination algorithm).
func (c *Comm) Ibarrier() (*Request, error) {
	const what = "ibarrier"
	if err := c.begin(what); err != nil {
		return nil, err
	}
	defer c.leave()
	return c.startNB(what, collSig{kind: kBarrier, t: Byte}, nil, nil, nbFast{ok: true}, func(x *collCall) { x.Dissemination() })
}

// Ibcast starts a broadcast (see [Comm.Bcast]) with a binomial tree or,
// for large buffers, van de Geijn's scatter + allgather; where every
// member runs in this process, a buffer of 64 KiB or more is read from
// the root's in place (shared memory), as Bcast does.
func (c *Comm) Ibcast(buf []byte, t Type, root int) (*Request, error) {
	const what = "ibcast"
	if err := c.begin(what); err != nil {
		return nil, err
	}
	defer c.leave()
	if err := checkType(what, t); err != nil {
		return nil, err
	}
	if err := c.checkRoot(what, root); err != nil {
		return nil, err
	}
	alg := c.nbPick(coll.Bcast, len(buf))
	call := c.bcastCall(what, buf, t, root)
	return c.startNB(what, call.sig, nil, call.local, call.fast, func(x *collCall) {
		if alg == coll.SharedMemory {
			x.bcastShared(buf, root)
			return
		}
		x.Bcast(buf, root, alg)
	})
}

// Iallreduce starts an allreduce (see [Comm.Allreduce]) with recursive
// doubling or, for long vectors, Rabenseifner's algorithm; where every
// member runs in this process, a vector of 64 KiB or more is reduced in
// place in the members' buffers (shared memory), as Allreduce does.
func (c *Comm) Iallreduce(send, recv []byte, t Type, op Op) (*Request, error) {
	const what = "iallreduce"
	if err := c.beginReduce(what, t, op); err != nil {
		return nil, err
	}
	defer c.leave()
	call := c.allreduceCall(what, send, recv, t, op)
	if call.local != nil {
		recv = alignedBytes(len(send)) // go on, to fail with the others
	}
	alg := c.nbPick(coll.Allreduce, len(send))
	return c.startNB(what, call.sig, op, call.local, call.fast, func(x *collCall) {
		switch {
		case c.size == 1:
			if x.OK() && !same(send, recv) {
				copy(recv, send)
			}
		case alg == coll.SharedMemory:
			x.allreduceShared(send, recv, op)
		default:
			x.Allreduce(send, recv, alg)
		}
	})
}

// Igather starts a Gather (see [Comm.Gather]); where every member runs in
// this process, one of less than 64 KiB in all completes in the
// communicator's table (coll_nonblocking_meet.go).
func (c *Comm) Igather(send, recv []byte, t Type, root int) (*Request, error) {
	const what = "igather"
	return c.startNBCallIn(what, c.checkRooted(what, t, root), func() nbCall { return c.gatherCall(what, send, recv, t, root) },
		func(p *Comm) error { return p.Gather(send, recv, t, root) })
}

// Igatherv starts a Gatherv (see [Comm.Gatherv]).
func (c *Comm) Igatherv(send, recv []byte, counts, displs []int, t Type, root int) (*Request, error) {
	const what = "igatherv"
	return c.startNBCall(what, c.checkRooted(what, t, root), func(p *Comm) error { return p.Gatherv(send, recv, counts, displs, t, root) })
}

// Iscatter starts a Scatter (see [Comm.Scatter]); short ones complete in
// the table as Igather's do.
func (c *Comm) Iscatter(send, recv []byte, t Type, root int) (*Request, error) {
	const what = "iscatter"
	return c.startNBCallIn(what, c.checkRooted(what, t, root), func() nbCall { return c.scatterCall(what, send, recv, t, root) },
		func(p *Comm) error { return p.Scatter(send, recv, t, root) })
}

// Iscatterv starts a Scatterv (see [Comm.Scatterv]).
func (c *Comm) Iscatterv(send []byte, counts, displs []int, recv []byte, t Type, root int) (*Request, error) {
	const what = "iscatterv"
	return c.startNBCall(what, c.checkRooted(what, t, root), func(p *Comm) error { return p.Scatterv(send, counts, displs, recv, t, root) })
}

// Iallgather starts an Allgather (see [Comm.Allgather]); where every
// member runs in this process, 64 KiB or more in all are read from the
// members' buffers in place (shared memory), and less completes in the
// communicator's table (coll_nonblocking_meet.go).
func (c *Comm) Iallgather(send, recv []byte, t Type) (*Request, error) {
	const what = "iallgather"
	return c.startNBCallIn(what, checkType(what, t), func() nbCall { return c.allgatherCall(what, send, recv, t) },
		func(p *Comm) error { return p.Allgather(send, recv, t) })
}

// Iallgatherv starts an Allgatherv (see [Comm.Allgatherv]).
func (c *Comm) Iallgatherv(send, recv []byte, counts, displs []int, t Type) (*Request, error) {
	const what = "iallgatherv"
	return c.startNBCall(what, checkType(what, t), func(p *Comm) error { return p.Allgatherv(send, recv, counts, displs, t) })
}

// Ialltoall starts an Alltoall (see [Comm.Alltoall]); where every
// member runs in this process, send buffers of 64 KiB or more are read in
// place (shared memory), and shorter ones (not in place) complete in the
// communicator's table (coll_nonblocking_meet.go).
func (c *Comm) Ialltoall(send, recv []byte, t Type) (*Request, error) {
	const what = "ialltoall"
	return c.startNBCallIn(what, checkType(what, t), func() nbCall { return c.alltoallCall(what, send, recv, t) },
		func(p *Comm) error { return p.Alltoall(send, recv, t) })
}

// Ialltoallv starts an Alltoallv (see [Comm.Alltoallv]).
func (c *Comm) Ialltoallv(send []byte, scounts, sdispls []int, recv []byte, rcounts, rdispls []int, t Type) (*Request, error) {
	const what = "ialltoallv"
	return c.startNBCall(what, checkType(what, t), func(p *Comm) error {
		return p.Alltoallv(send, scounts, sdispls, recv, rcounts, rdispls, t)
	})
}

// Ireduce starts a Reduce (see [Comm.Reduce]); where every member runs
// in this process, one of less than 64 KiB completes in the
// communicator's table (coll_nonblocking_meet.go).
func (c *Comm) Ireduce(send, recv []byte, t Type, op Op, root int) (*Request, error) {
	const what = "ireduce"
	return c.startNBCallIn(what, cmpErr(c.checkReduce(what, t, op), c.checkRoot(what, root)),
		func() nbCall { return c.reduceCall(what, send, recv, t, op, root) },
		func(p *Comm) error { return p.Reduce(send, recv, t, op, root) })
}

// IreduceScatterBlock starts a ReduceScatterBlock (see
// [Comm.ReduceScatterBlock]); where every member runs in this process,
// one of less than 64 KiB completes in the communicator's table
// (coll_nonblocking_meet.go).
func (c *Comm) IreduceScatterBlock(send, recv []byte, t Type, op Op) (*Request, error) {
	const what = "ireduce_scatter_block"
	return c.startNBCallIn(what, c.checkReduce(what, t, op), func() nbCall { return c.reduceScatterCall(what, send, recv, t, op) },
		func(p *Comm) error { return p.ReduceScatterBlock(send, recv, t, op) })
}

// Iscan starts a Scan (see [Comm.Scan]); where every member runs in this
// process, one of less than 64 KiB completes in the communicator's table
// (coll_nonblocking_meet.go).
func (c *Comm) Iscan(send, recv []byte, t Type, op Op) (*Request, error) {
	const what = "iscan"
	return c.startNBCallIn(what, c.checkReduce(what, t, op), func() nbCall { return c.scanCall(what, send, recv, t, op, false) },
		func(p *Comm) error { return p.Scan(send, recv, t, op) })
}

// Iexscan starts an Exscan (see [Comm.Exscan]); short ones complete in
// the table as Iscan's do.
func (c *Comm) Iexscan(send, recv []byte, t Type, op Op) (*Request, error) {
	const what = "iexscan"
	return c.startNBCallIn(what, c.checkReduce(what, t, op), func() nbCall { return c.scanCall(what, send, recv, t, op, true) },
		func(p *Comm) error { return p.Exscan(send, recv, t, op) })
}

// startNB makes the private context and the request, and starts on a
// goroutine of its own the agreement on sig and local (coll_agree.go),
// then run.
func (c *Comm) startNB(what string, sig collSig, op Op, local error, fast nbFast, run func(x *collCall)) (*Request, error) {
	if t := c.nbTable(); t != nil {
		return c.meetNB(t, &nbMember{what: what, sig: sig, op: op, local: local, fast: fast, run: run})
	}
	p, r, err := c.newNB(what)
	if err != nil {
		return nil, err
	}
	x := p.coll().newCall(what, sig.t, op, true)
	x.Fail(local)
	c.runNB(r, func(quiet bool) error {
		x.quiet = quiet
		x.agreeOn(what, sig)
		run(x)
		return x.Result()
	})
	return user(r), nil
}

// startNBCall starts f, the blocking collective of a non-blocking one, on
// a goroutine of its own, run on the operation's private communicator —
// unless invalid, the error of the arguments that are invalid on their own
// (a type, a root, a nil op), is not nil: the call fails with it at once,
// as the blocking call would. f runs the blocking call's other argument
// checks, the agreement on them (coll_agree.go: their errors come back
// through the request, on every member where the blocking call fails) and
// its point-to-point algorithms, with quiet waits — the private
// communicator reports neither shared memory nor a two-level shape, so
// that no blocking shared-memory algorithm (whose gates a helper may not
// wait at) runs there; a long Allgather or Alltoall of members that all
// run in this process reads their buffers in place instead
// (coll_nonblocking_shm.go).
func (c *Comm) startNBCall(what string, invalid error, f func(p *Comm) error) (*Request, error) {
	return c.startNBCallIn(what, invalid, nil, f)
}

// startNBCallIn is startNBCall for a collective that may complete in its
// communicator's table: call, when not nil, says how (nbCall).
func (c *Comm) startNBCallIn(what string, invalid error, call func() nbCall, f func(p *Comm) error) (*Request, error) {
	if invalid != nil {
		return nil, invalid
	}
	if err := c.begin(what); err != nil {
		return nil, err
	}
	defer c.leave()
	shared := c.sharedMemory()
	if t := c.nbTable(); t != nil {
		var x nbCall
		if call != nil {
			x = call()
		}
		return c.meetNB(t, &nbMember{what: what, sig: x.sig, op: x.op, local: x.local, fast: x.fast, f: f, shared: shared})
	}
	p, r, err := c.newNB(what)
	if err != nil {
		return nil, err
	}
	p.cst = &collState{local: -1, hierSeen: true, quiet: true, private: true, shared: shared}
	c.runNB(r, func(quiet bool) error {
		p.cst.quiet = quiet
		return f(p)
	})
	return user(r), nil
}

// newNB makes a non-blocking collective's private communicator, derived
// from c's like Dup's, and its request: a receive on it that no message
// matches, which Cancel refuses.
func (c *Comm) newNB(what string) (*Comm, *engine.Request, error) {
	c.kids++
	p := c.nbComm(what, c.kids)
	r, err := p.doneRequest(what)
	if err != nil {
		return nil, nil, err
	}
	return p, r, nil
}

// doneRequest returns the request of an operation that runs elsewhere: a
// receive that no message matches (from the caller itself, on c's
// collective context, with the tag nothing sends), which the operation
// withdraws with its outcome, an abort fails like any other, and Cancel
// refuses.
func (c *Comm) doneRequest(what string) (*engine.Request, error) {
	r, err := c.selfWait(false)
	if err != nil {
		return nil, fmt.Errorf("comm: %s: %w", what, err)
	}
	r.SetCollective()
	return r, nil
}

// selfWait posts a receive from the caller itself on c's collective
// context that no message matches (tagCollNBDone), so that only whoever
// completes an operation for the caller, an abort or the deadlock
// detector completes it: what a non-blocking collective's request is,
// and what a persistent one's start waits on. pooled: an internal one,
// recycled after use (Finish).
func (c *Comm) selfWait(pooled bool) (*engine.Request, error) {
	return c.coll().startRecv(nil, Byte, c.rank, tagCollNBDone, false, pooled)
}

// runNB runs body, the operation of non-blocking collective request r,
// and completes r with its outcome: at once on a communicator of one
// rank, otherwise on a goroutine counted in the rank's helpers, started
// at once so that the operation progresses while the rank computes —
// unless the rank comes to Wait for r before that goroutine took the
// operation up: then the rank runs it itself, in Wait, as a blocking
// collective (quiet false: it waits as the rank), and the goroutine,
// once it runs, finds nothing to do. Where ranks outnumber the Ps, the
// goroutine of an operation started and waited for at once seldom runs
// first, and each of its waits would cost a wake-up of another thread
// (Ibarrier and Wait on 4 ranks of 2 cores: 31–32 µs, 23–29 run so; the
// blocking Barrier takes 1.3, and most of the rest is the agreement's and
// the algorithm's point-to-point rounds).
func (c *Comm) runNB(r *engine.Request, body func(quiet bool) error) {
	if c.size == 1 {
		r.Retract(body(false))
		return
	}
	var taken atomic.Bool
	r.SetInline(func() {
		if taken.CompareAndSwap(false, true) {
			r.Retract(body(false))
		}
	})
	c.ep.Help(func() {
		if taken.CompareAndSwap(false, true) {
			r.Retract(body(true))
		}
	})
}

// Go starts f, an operation of the caller's rank made of mpgo calls, on a
// goroutine of its own, and returns a request that completes with f's
// error: MPI's generalized requests (MPI_Grequest_start), with the
// operation's body given. It is how non-blocking forms of composite
// operations are made (typed's non-blocking neighbourhood collectives).
// Cancel refuses the request, as a non-blocking collective's. While f
// runs its rank counts as running for the deadlock detector, so a
// deadlock that involves f's own operations is not reported.
func (c *Comm) Go(f func() error) (*Request, error) {
	const what = "go"
	if f == nil {
		return nil, fmt.Errorf("comm: go of a nil func: %w", ErrArg)
	}
	if err := c.usable(); err != nil {
		return nil, fmt.Errorf("comm: %s: %w", what, err)
	}
	// No context is derived, so calls of Go need not match across ranks.
	r, err := c.doneRequest(what)
	if err != nil {
		return nil, err
	}
	c.ep.Help(func() { r.Retract(f()) })
	return user(r), nil
}
