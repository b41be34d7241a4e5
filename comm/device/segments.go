package device

// Segments is an optional interface of a [Device] whose processes can map
// memory together (the shared-memory backend, between the processes of a
// host): a segment that one process creates and the others map, which
// their ranks then load and store directly, as a window of
// MPI_Win_allocate_shared is. The engine finds it by type assertion,
// once, when the world is made; package comm's Comm.AllocShared uses
// it, and a world whose device lacks it shares no memory between
// processes.
//
// A segment is known by its creator's process and a key the creator
// chose (at random, and told the others through messages). Each call of
// CreateSegment or AttachSegment is one use of the process's mapping,
// which the process's last ReleaseSegment unmaps. Methods are safe for
// concurrent use.
type Segments interface {
	// SharesMemory reports whether this process can map segments with
	// process proc (this process counts).
	SharesMemory(proc int) bool
	// CreateSegment makes a segment of size bytes, zero-filled, maps it
	// here and hands it to each of procs (processes for which
	// SharesMemory holds, not this one) under key. It returns the
	// mapping. Errors wrap [ErrArg] (a size or process it cannot take),
	// [ErrPeerLost] or [ErrClosed].
	CreateSegment(key uint64, size int, procs []int) ([]byte, error)
	// AttachSegment returns the mapping of the segment of size bytes
	// that process creator created under key, waiting for it to arrive
	// (for a bounded time) and mapping it the first time. The creator's
	// own process gets the creator's mapping.
	AttachSegment(key uint64, creator, size int) ([]byte, error)
	// ReleaseSegment gives back one use of the segment creator made under
	// key; the last one unmaps it here.
	ReleaseSegment(key uint64, creator int) error
}
