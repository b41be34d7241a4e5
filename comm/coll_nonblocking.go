package comm

import (
	"fmt"

	"github.com/mpgo/mpgo/comm/internal/coll"
)

// The non-blocking collectives. Each runs the blocking point-to-point
// algorithm on a goroutine of its own, on a private context derived from
// the communicator's like Dup's (every member derives the same one, as
// they call collectives in the same order), so that its messages never
// meet those of the communicator's other collectives.
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
// The buffers belong to the operation until the request completes. Cancel
// must not be called on these requests (MPI makes it erroneous): it would
// complete the request while the operation goes on.

// Ibarrier starts a barrier and returns at once; the request completes
// once every member has called Ibarrier (dissemination algorithm).
func (c *Comm) Ibarrier() (*Request, error) {
	const what = "ibarrier"
	if err := c.collUsable(what); err != nil {
		return nil, err
	}
	return c.startNB(what, Byte, nil, nil, func(x *collCall) { x.Dissemination() })
}

// Ibcast starts a broadcast (see [Comm.Bcast]) with a binomial tree or,
// for large buffers, van de Geijn's scatter + allgather.
func (c *Comm) Ibcast(buf []byte, t Type, root int) (*Request, error) {
	const what = "ibcast"
	if err := c.collUsable(what); err != nil {
		return nil, err
	}
	if err := checkType(what, t); err != nil {
		return nil, err
	}
	if err := c.checkRoot(what, root); err != nil {
		return nil, err
	}
	alg := c.pick(coll.Bcast, coll.NonBlocking, len(buf))
	return c.startNB(what, t, nil, whole(what, "buffer", buf, t), func(x *collCall) { x.Bcast(buf, root, alg) })
}

// Iallreduce starts an allreduce (see [Comm.Allreduce]) with recursive
// doubling or, for long vectors, Rabenseifner's algorithm.
func (c *Comm) Iallreduce(send, recv []byte, t Type, op Op) (*Request, error) {
	const what = "iallreduce"
	if err := c.checkReduce(what, t, op); err != nil {
		return nil, err
	}
	local := whole(what, "send buffer", send, t)
	if local == nil {
		local = checkInOut(what, send, recv)
	}
	if local != nil {
		recv = alignedBytes(len(send))
	}
	alg := c.pick(coll.Allreduce, coll.NonBlocking, len(send))
	return c.startNB(what, t, op, local, func(x *collCall) {
		if c.size == 1 {
			if x.OK() && !same(send, recv) {
				copy(recv, send)
			}
			return
		}
		x.Allreduce(send, recv, alg)
	})
}

// startNB makes the private context and the request, and starts run on a
// goroutine of its own.
func (c *Comm) startNB(what string, t Type, op Op, local error, run func(x *collCall)) (*Request, error) {
	c.kids++
	p := newComm(c.ep, childContext(c.ctx, c.kids, colorNonBlocking), c.rank, c.size, c.ranks,
		fmt.Sprintf("%s.%s%d", c, what, c.kids))
	p.shareLife(c)
	r, err := p.coll().startRecv(nil, Byte, c.rank, tagCollNBDone, false, false)
	if err != nil {
		return nil, fmt.Errorf("comm: %s: %w", what, err)
	}
	x := p.coll().newCall(what, t, op, true)
	x.Fail(local)
	if c.size == 1 {
		run(x)
		r.Retract(x.Result())
		return user(r), nil
	}
	c.ep.AddHelper(1) // running from now: see engine.Request.WaitQuiet
	go func() {
		run(x)
		r.Retract(x.Result())
		c.ep.AddHelper(-1)
	}()
	return user(r), nil
}
