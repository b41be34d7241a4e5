package comm

import "github.com/mpgo/mpgo/comm/internal/coll"

// barrier is the barrier with a choice of algorithm: on a communicator
// whose members share memory, one gate (a waiter yields, then parks; the
// last arriver opens it and wakes those that parked at once, by closing
// one channel); otherwise the dissemination algorithm, or both, in two
// levels, on a communicator that spans processes with several members in
// some (coll_hier.go).
func (c *Comm) barrier() error {
	if err := c.collUsable("barrier"); err != nil {
		return err
	}
	if c.size == 1 {
		return nil
	}
	switch c.pick(coll.Barrier, coll.Plain, 0) {
	case coll.SharedMemory:
		return c.barrierShm()
	case coll.Hierarchical:
		return c.barrierHier()
	}
	x := c.call("barrier", Byte, nil)
	x.Dissemination()
	return x.Result()
}

// barrierShm passes a gate. It publishes only its kind (so that a member
// calling another collective at this point fails) and skips the check of
// the others' slots, which would cost every rank O(n).
func (c *Comm) barrierShm() error {
	s, err := c.shm()
	if err != nil {
		return err
	}
	st := c.state()
	p := st.gen & 1
	st.gen++
	s.slots[p][c.rank] = shmSlot{kind: kBarrier}
	s.sigs[p][c.rank] = shmSig{kind: kBarrier}
	return s.gate.pass(c, nil)
}
