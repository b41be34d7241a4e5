package comm

// BarrierAlg runs the barrier with a choice of algorithm (coll_barrier.go),
// which Barrier is to call.
func (c *Comm) BarrierAlg() error { return c.barrier() }

// SharedMemory reports whether c's collectives may use shared memory.
func (c *Comm) SharedMemory() bool { return c.sharedMemory() }
