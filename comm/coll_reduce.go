package comm

import (
	"fmt"

	"github.com/mpgo/mpgo/comm/internal/coll"
)

// Reduce combines every member's send, elements of type t, with op in rank
// order and leaves the result in root's recv (len(recv) == len(send); recv
// is ignored elsewhere and may be nil). send and recv may be the same slice
// at the root (in place). Every member must pass the same length.
func (c *Comm) Reduce(send, recv []byte, t Type, op Op, root int) error {
	const what = "reduce"
	if err := c.beginReduce(what, t, op); err != nil {
		return err
	}
	defer c.leave()
	if err := c.checkRoot(what, root); err != nil {
		return err
	}
	local := reduceArgs(what, send, recv, t, c.rank == root)
	if c.rank == root && local != nil {
		recv = alignedBytes(len(send)) // go on, to fail with the others
	}
	return c.reduce(send, recv, t, op, root, local)
}

// reduce is Reduce past the checks that need no communication.
func (c *Comm) reduce(send, recv []byte, t Type, op Op, root int, local error) error {
	if c.size == 1 {
		if local == nil {
			copy(recv, send)
		}
		return local
	}
	alg := c.pick(coll.Reduce, coll.Plain, len(send))
	if alg == coll.SharedMemory {
		return c.reduceShm(send, recv, t, op, root, local)
	}
	x := c.call("reduce", collSig{kind: kReduce, root: root, t: t, n: len(send)}, op, local)
	x.Reduce(send, recv, root, alg)
	return x.Result()
}

// Allreduce combines every member's send with op in rank order and leaves
// the result in every member's recv (len(recv) == len(send); the same slice
// for in place). Every member must pass the same length.
func (c *Comm) Allreduce(send, recv []byte, t Type, op Op) error {
	const what = "allreduce"
	if err := c.beginReduce(what, t, op); err != nil {
		return err
	}
	defer c.leave()
	local := reduceArgs(what, send, recv, t, true)
	if local != nil {
		recv = alignedBytes(len(send))
	}
	if c.size == 1 {
		return c.allreduce(send, recv, t, op, local)
	}
	alg := c.pick(coll.Allreduce, coll.Plain, len(send))
	if alg == coll.SharedMemory && coll.Combined(coll.Allreduce, len(send), c.size) {
		// allreduceShm's combined reduction, awaited here (gate.await
		// says why).
		x, err := c.combinedArrive(what, kAllreduce, send, t, op, -1, local)
		if err == nil {
			err = x.await()
		}
		if err != nil {
			return err
		}
		return x.combinedEnd(recv, -1)
	}
	return c.allreduceBy(alg, send, recv, t, op, local)
}

// allreduce is Allreduce past the checks that need no communication.
func (c *Comm) allreduce(send, recv []byte, t Type, op Op, local error) error {
	if c.size == 1 {
		if local == nil {
			copy(recv, send)
		}
		return local
	}
	return c.allreduceBy(c.pick(coll.Allreduce, coll.Plain, len(send)), send, recv, t, op, local)
}

// allreduceBy is allreduce on more than one member with the algorithm alg.
func (c *Comm) allreduceBy(alg coll.Algorithm, send, recv []byte, t Type, op Op, local error) error {
	switch alg {
	case coll.SharedMemory:
		return c.allreduceShm(send, recv, t, op, local)
	case coll.Hierarchical:
		return c.allreduceHier(send, recv, t, op, local)
	}
	x := c.call("allreduce", collSig{kind: kAllreduce, t: t, n: len(send)}, op, local)
	if c.takeShared(x, len(send), true) { // a persistent one's (coll_nonblocking_shm.go)
		x.allreduceShared(send, recv, op)
		return x.Result()
	}
	x.Allreduce(send, recv, alg)
	return x.Result()
}

func (c *Comm) checkReduce(what string, t Type, op Op) error {
	if err := c.collUsable(what); err != nil {
		return err
	}
	if err := checkType(what, t); err != nil {
		return err
	}
	if op == nil {
		return fmt.Errorf("comm: %s with a nil op: %w", what, ErrArg)
	}
	return nil
}

// beginReduce is checkReduce, then enter: the caller leaves once done.
func (c *Comm) beginReduce(what string, t Type, op Op) error {
	if err := c.checkReduce(what, t, op); err != nil {
		return err
	}
	return c.enter(what)
}

// checkInOut checks a reduction's send and recv: equal lengths, and either
// the same slice or disjoint.
func checkInOut(what string, send, recv []byte) error {
	if len(recv) != len(send) {
		return fmt.Errorf("comm: %s: receive buffer of %d bytes for %d to send: %w", what, len(recv), len(send), ErrArg)
	}
	if !same(send, recv) && overlap(send, recv) {
		return fmt.Errorf("comm: %s: send and receive buffers overlap: %w", what, ErrArg)
	}
	return nil
}
