package comm

// BarrierAlg runs the barrier with a choice of algorithm (coll_barrier.go),
// which Barrier is to call.
func (c *Comm) BarrierAlg() error { return c.barrier() }

// SharedMemory reports whether c's collectives may use shared memory.
func (c *Comm) SharedMemory() bool { return c.sharedMemory() }

// Busy reports whether a collective call of this rank is in progress on c
// (guard.go).
func (c *Comm) Busy() bool { return c.busy.Load() }
