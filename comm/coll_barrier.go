package comm

import "github.com/mpgo/mpgo/comm/internal/coll"

// barrier is the barrier with a choice of algorithm: on a communicator
// whose members share memory, one gate (a waiter yields, then parks; the
// last arriver opens it and wakes those that parked at once, by closing
// one channel), passed as a collective with no arguments: the verdict of
// the last arriver (O(n) once, O(1) for the others) tells it whether a
// member calls another collective at this point (then every member
// fails) and whether that collective ends with a second gate, which the
// barrier must pass too; otherwise the dissemination algorithm, or both,
// in two levels, on a communicator that spans processes with several
// members in some (coll_hier.go).
func (c *Comm) barrier() error {
	if err := c.begin("barrier"); err != nil {
		return err
	}
	defer c.leave()
	if c.size == 1 {
		return nil
	}
	alg := c.pick(coll.Barrier, coll.Plain, 0)
	if alg != coll.SharedMemory {
		return c.barrierBy(alg)
	}
	// Awaited here (gate.await says why).
	x, err := c.shmArrive("barrier", shmSig{kind: kBarrier}, nil, nil)
	if err == nil {
		err = x.await()
	}
	if err != nil {
		return err
	}
	return x.finish()
}

// barrierBy is the barrier by alg, hierarchical or point to point: a
// frame of its own (not inlined), so that the shared-memory barrier's
// keeps no room for them (see shmArrive).
//
//go:noinline
func (c *Comm) barrierBy(alg coll.Algorithm) error {
	if alg == coll.Hierarchical {
		return c.barrierHier()
	}
	x := c.call("barrier", collSig{kind: kBarrier, t: Byte}, nil, nil)
	x.Dissemination()
	return x.Result()
}
