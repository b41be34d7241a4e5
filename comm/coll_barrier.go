package comm

// barrier is the barrier with a choice of algorithm: on a communicator
// whose members share memory, one gate (every rank parks once and the last
// arriver wakes all at once, by closing one channel); otherwise the
// dissemination algorithm, or both, in two levels, on a communicator that
// spans processes with several members in some (coll_hier.go).
func (c *Comm) barrier() error {
	if err := c.collUsable("barrier"); err != nil {
		return err
	}
	if c.size == 1 {
		return nil
	}
	switch c.pick(CollBarrier, func() Algorithm { return AlgDissemination }) {
	case AlgSharedMemory:
		return c.barrierShm()
	case AlgHierarchical:
		return c.barrierHier()
	}
	x := c.call("barrier", Byte, nil)
	x.dissemination()
	return x.result()
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
	return s.gate.pass(c)
}

// dissemination is Hensgen, Finkel and Manber's barrier: in round k every
// rank signals rank+2^k and waits for rank-2^k; after ⌈log2 n⌉ rounds each
// has heard, transitively, from all.
func (x *collCall) dissemination() {
	n, me := x.c.size, x.c.rank
	for k := 1; k < n; k <<= 1 {
		x.sendrecv(nil, (me+k)%n, tagDissem, nil, (me-k+n)%n, tagDissem)
	}
}
